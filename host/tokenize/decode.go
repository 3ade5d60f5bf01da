package tokenize

import (
	"fmt"
	"strings"
)

// Decode turns token ids of the encoder's vocabulary back into text, for
// providers whose embeddings API takes only text when a client sent token
// ids (LangChain's OpenAIEmbeddings does by default, having tokenized with
// tiktoken itself). An id outside the vocabulary is an error, not silently
// dropped text. Bytes of a character split across the ends of the list
// become U+FFFD, as any UTF-8 decoder would make them.
func (e *Encoder) Decode(ids []int) (string, error) {
	enc, err := e.l.tiktoken(e.name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	one := make([]int, 1)
	for _, id := range ids {
		one[0] = id
		t := enc.Decode(one)
		if t == "" {
			return "", fmt.Errorf("token id %d is not in the %s vocabulary", id, e.name)
		}
		b.WriteString(t)
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD"), nil
}
