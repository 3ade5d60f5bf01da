package abi

import (
	"bytes"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	fields := [][]byte{[]byte("POST"), {}, []byte("/chat/completions"), bytes.Repeat([]byte("x"), 70000)}
	var frame []byte
	for _, f := range fields {
		frame = AppendField(frame, f)
	}
	if len(frame) != FrameSize(fields...) {
		t.Fatalf("size %d, FrameSize %d", len(frame), FrameSize(fields...))
	}
	got, err := Fields(nil, frame)
	if err != nil || len(got) != len(fields) {
		t.Fatalf("%v, %d fields", err, len(got))
	}
	for i := range fields {
		if !bytes.Equal(got[i], fields[i]) {
			t.Fatalf("field %d differs", i)
		}
	}
}

func TestFieldsRejectsMalformed(t *testing.T) {
	for _, f := range [][]byte{{1}, {1, 0, 0}, {5, 0, 0, 0, 'a'}, {0xff, 0xff, 0xff, 0xff}} {
		if _, err := Fields(nil, f); err != ErrFrame {
			t.Errorf("%v: err %v, want ErrFrame", f, err)
		}
	}
}

func TestHookNames(t *testing.T) {
	for h := HookChatRequest; h <= HookPostChunk; h++ {
		got, ok := HookByName(h.String())
		if !ok || got != h {
			t.Errorf("hook %d name %q does not round-trip", h, h.String())
		}
	}
}

func FuzzFields(f *testing.F) {
	f.Add(AppendField(AppendField(nil, []byte("a")), []byte("bc")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		fs, err := Fields(nil, frame)
		if err != nil {
			return
		}
		var again []byte
		for _, x := range fs {
			again = AppendField(again, x)
		}
		if !bytes.Equal(again, frame) {
			t.Fatal("re-encoding a decoded frame changed it")
		}
	})
}
