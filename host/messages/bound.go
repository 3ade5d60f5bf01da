package messages

import (
	"github.com/switchyard/switchyard/host/tokenize"
	"github.com/tidwall/gjson"
)

// PromptBound is the prompt figure for the hold of a Messages body sent
// as it is to a provider that speaks Messages (native mode): an upper
// bound on its tokens, as tokenize.EstimatePrompt is for a chat body. The
// translated chat body is not one: the translation drops what chat has
// no place for (thinking and redacted_thinking blocks of earlier turns,
// their signatures, cache_control, Anthropic's server tools), all of
// which the native body still sends and the provider counts.
//
// It is the body's raw size (a token covers at least one byte) with each
// message's framing, except that a base64 image's data counts as
// tokenize.ImageTokensBound instead of its bytes. One pass over the
// messages; the hold is capped at the context length as always.
func PromptBound(body []byte) (tokens, images int64) {
	size := int64(len(body))
	var messages int
	gjson.GetBytes(body, "messages").ForEach(func(_, m gjson.Result) bool {
		messages++
		m.Get("content").ForEach(func(_, b gjson.Result) bool {
			size, images = imageBlock(b, size, images)
			if b.Get("type").Str == "tool_result" {
				b.Get("content").ForEach(func(_, inner gjson.Result) bool {
					size, images = imageBlock(inner, size, images)
					return true
				})
			}
			return true
		})
		return true
	})
	return tokenize.ChatTextBound(int(size), messages+1) + images*tokenize.ImageTokensBound, images // +1: the system prompt's framing
}

// imageBlock takes a base64 image block's data out of size and counts
// the image.
func imageBlock(b gjson.Result, size, images int64) (int64, int64) {
	if b.Get("type").Str != "image" {
		return size, images
	}
	if d := b.Get("source.data"); d.Exists() {
		size -= int64(len(d.Raw))
	}
	return size, images + 1
}
