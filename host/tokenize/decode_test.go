package tokenize

import "testing"

func TestDecodeRoundTrip(t *testing.T) {
	for _, name := range []string{CL100K, O200K} {
		e, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"hello world", "Grüße, 世界! <|endoftext|> as text", " leading space\nand lines"} {
			ids := tk(t, e).EncodeOrdinary(text)
			got, err := e.Decode(ids)
			if err != nil || got != text {
				t.Errorf("%s: Decode(Encode(%q)) = %q, %v", name, text, got, err)
			}
		}
		if _, err := e.Decode([]int{15339, 1 << 30}); err == nil {
			t.Errorf("%s: an id outside the vocabulary decoded without error", name)
		}
	}
}
