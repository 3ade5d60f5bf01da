package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/tidwall/gjson"
)

// A stream's chunks pass RepairChunk, then Chunk, then the pump reads the
// error, the usage and each choice's content and finish reason: done with
// gjson.Get and sjson.Set that was about eight parses of every chunk.
// ChunkStream does the same work in one walk over the chunk for the chunk
// every upstream actually sends (well-typed, valid UTF-8, no duplicate or
// escaped keys among the fields read), and splices the identity values in
// without re-parsing. Any other chunk takes the original path (RepairChunk,
// Chunk, gjson), so what it does for odd input is, by construction, what it
// did before; FuzzChunkStream checks the fast path against that path byte
// for byte.

// ChunkFacts is what the host reads from one chunk. Its strings and results
// alias the chunk returned with them, and the facts are overwritten by the
// stream's next chunk.
type ChunkFacts struct {
	// Error is the chunk's top-level error member, OpenAI's way of failing
	// inside a stream (it does not exist on an ordinary chunk).
	Error gjson.Result
	// Usage reports that the chunk carries a usage object.
	Usage bool
	// Choices are the chunk's choices, in order.
	Choices []ChoiceFacts
}

// ChoiceFacts is what the host reads from one choice of a chunk.
type ChoiceFacts struct {
	Content      string // delta.content ("" when absent or not a string)
	FinishReason string
	Finished     bool // finish_reason is a string
}

// ChunkStream makes one stream's upstream chunks the gateway's: it is
// RepairChunk followed by Chunk, and reads ChunkFacts from the result.
type ChunkStream struct {
	id Identity
	// The identity values as sjson encodes a string, built once per stream.
	genID, model, provider []byte
	now                    func() int64
	facts                  ChunkFacts
}

// NewChunkStream starts the chunk handling of one stream named id.
func NewChunkStream(id Identity) *ChunkStream {
	return &ChunkStream{
		id:       id,
		genID:    appendStringify(nil, id.GenID),
		model:    appendStringify(nil, id.Model),
		provider: appendStringify(nil, id.Provider),
		now:      func() int64 { return time.Now().Unix() },
	}
}

// Next checks and rewrites one upstream chunk. It returns the chunk to hand
// out, the facts read from it, what was repaired (empty when nothing was),
// and false when the chunk must be dropped (the repairs then say why). The
// chunk returned may be ch itself.
func (s *ChunkStream) Next(ch []byte) ([]byte, *ChunkFacts, []string, bool) {
	if out, ok := s.fast(ch); ok {
		return out, &s.facts, nil, true
	}
	out, fixes, ok := RepairChunk(ch)
	if !ok {
		return nil, nil, fixes, false
	}
	out = chunkAt(out, s.id, s.now())
	s.readFacts(out)
	return out, &s.facts, fixes, true
}

// readFacts fills s.facts with gjson, the way the pump used to read them.
func (s *ChunkStream) readFacts(ch []byte) {
	js := unsafe.String(unsafe.SliceData(ch), len(ch))
	s.facts.Error = gjson.Get(js, "error")
	s.facts.Usage = gjson.Get(js, "usage").IsObject()
	s.facts.Choices = s.facts.Choices[:0]
	for _, c := range gjson.Get(js, "choices").Array() {
		f := ChoiceFacts{Content: c.Get("delta.content").Str}
		if fr := c.Get("finish_reason"); fr.Type == gjson.String {
			f.Finished, f.FinishReason = true, fr.Str
		}
		s.facts.Choices = append(s.facts.Choices, f)
	}
}

// Member bits, to find duplicates of the members read: gjson.Get reads the
// first of duplicate keys, and rather than mimic that the fast path leaves
// such a chunk to the original path.
const (
	mID = 1 << iota
	mModel
	mProvider
	mCreated
	mUsage
	mChoices
	mError
)

// fast is Next for a chunk that needs no repair. ok is false when the chunk
// needs the original path.
func (s *ChunkStream) fast(ch []byte) (out []byte, ok bool) {
	if len(ch) == 0 || ch[0] != '{' || !utf8.Valid(ch) || !jsonwalk.ValidBytes(ch) {
		return nil, false
	}
	// Parsed without a copy: the results alias ch, which is not changed.
	root := gjson.Parse(unsafe.String(unsafe.SliceData(ch), len(ch)))
	var id, model, provider, choices gjson.Result
	var seen int
	s.facts = ChunkFacts{Choices: s.facts.Choices[:0]}
	ok = true
	root.ForEach(func(k, v gjson.Result) bool {
		if strings.IndexByte(k.Raw, '\\') >= 0 {
			ok = false // an escaped key may name a member gjson.Get finds
			return false
		}
		var bit int
		switch k.Str {
		case "id":
			bit, id = mID, v
		case "model":
			bit, model = mModel, v
		case "provider":
			bit, provider = mProvider, v
		case "created":
			bit = mCreated
			ok = v.Type == gjson.Number
		case "usage":
			bit = mUsage
			ok = v.Type == gjson.Null || v.IsObject()
			s.facts.Usage = v.IsObject()
		case "choices":
			bit, choices = mChoices, v
			ok = v.IsArray()
		case "error":
			bit = mError
			s.facts.Error = v
		default:
			return true
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
		return ok
	})
	if !ok || seen&mChoices == 0 {
		return nil, false
	}
	choices.ForEach(func(_, c gjson.Result) bool {
		ok = s.choice(c)
		return ok
	})
	if !ok {
		return nil, false
	}
	return s.rewrite(ch, seen&mCreated == 0, id, model, provider), true
}

// Choice member bits.
const (
	cIndex = 1 << iota
	cFinish
	cLogprobs
	cDelta
)

// choice checks one choice as repair does and records its facts; false
// when it needs a repair (or has duplicate or escaped keys).
func (s *ChunkStream) choice(c gjson.Result) bool {
	if !c.IsObject() {
		return false
	}
	var delta gjson.Result
	var f ChoiceFacts
	seen, ok := 0, true
	c.ForEach(func(k, v gjson.Result) bool {
		if strings.IndexByte(k.Raw, '\\') >= 0 {
			ok = false
			return false
		}
		var bit int
		switch k.Str {
		case "index":
			bit = cIndex
			ok = v.Type == gjson.Number
		case "finish_reason":
			bit = cFinish
			ok = v.Type == gjson.String || v.Type == gjson.Null
			if v.Type == gjson.String {
				f.Finished, f.FinishReason = true, v.Str
				// A value to map (FinishReason) takes the repairing path.
				to, _ := FinishReason(v.Str)
				ok = to == v.Str
			}
		case "logprobs":
			bit = cLogprobs
			ok = v.Type == gjson.Null || v.IsObject()
		case "delta":
			bit, delta = cDelta, v
			ok = v.IsObject()
		default:
			return true
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
		return ok
	})
	// A missing index or delta is written in by repair.
	if !ok || seen&(cIndex|cDelta) != cIndex|cDelta {
		return false
	}
	if f.Content, ok = checkDelta(delta); !ok {
		return false
	}
	s.facts.Choices = append(s.facts.Choices, f)
	return true
}

// checkDelta checks a delta as repairMessage does; it returns its content.
func checkDelta(d gjson.Result) (content string, ok bool) {
	var seen uint
	ok = true
	d.ForEach(func(k, v gjson.Result) bool {
		if strings.IndexByte(k.Raw, '\\') >= 0 {
			ok = false
			return false
		}
		var bit uint
		switch k.Str {
		case "role":
			bit = 1
			ok = isStringOrNull(v)
		case "refusal":
			bit = 2
			ok = isStringOrNull(v)
		case "reasoning":
			bit = 4
			ok = isStringOrNull(v)
		case "reasoning_content":
			bit = 8
			ok = isStringOrNull(v)
		case "content":
			bit = 16
			ok = isStringOrNull(v)
			content = v.Str
		case "function_call":
			bit = 32
			ok = v.Type == gjson.Null || v.IsObject()
		case "tool_calls":
			bit = 64
			ok = v.Type == gjson.Null || (v.IsArray() && checkToolCalls(v))
		default:
			return true
		}
		if seen&bit != 0 {
			ok = false
		}
		seen |= bit
		return ok
	})
	return content, ok
}

func checkToolCalls(calls gjson.Result) bool {
	ok := true
	calls.ForEach(func(_, call gjson.Result) bool {
		ok = call.IsObject() && checkMembers(call, func(k string, v gjson.Result) bool {
			switch k {
			case "index":
				return v.Type == gjson.Number
			case "id", "type":
				return isStringOrNull(v)
			case "function":
				return v.IsObject() && checkMembers(v, func(k string, v gjson.Result) bool {
					return (k != "name" && k != "arguments") || isStringOrNull(v)
				})
			}
			return true
		})
		return ok
	})
	return ok
}

// checkMembers reports whether check accepts every member of obj, and obj
// has no escaped key and no duplicate key that check looks at.
func checkMembers(obj gjson.Result, check func(k string, v gjson.Result) bool) bool {
	ok := true
	var keys [8]string
	n := 0
	obj.ForEach(func(k, v gjson.Result) bool {
		if strings.IndexByte(k.Raw, '\\') >= 0 {
			ok = false
			return false
		}
		for _, seen := range keys[:n] {
			if seen == k.Str {
				ok = false
				return false
			}
		}
		if n == len(keys) {
			ok = false // an unusual object: the original path handles it
			return false
		}
		keys[n] = k.Str
		n++
		ok = check(k.Str, v)
		return ok
	})
	return ok
}

func isStringOrNull(v gjson.Result) bool {
	return v.Type == gjson.String || v.Type == gjson.Null
}

// rewrite is chunkAt for a chunk read by fast: the identity values that
// differ are spliced in where they are, and the members missing are
// appended in the order (and with the bytes) sjson.SetBytes appended them.
func (s *ChunkStream) rewrite(ch []byte, addCreated bool, id, model, provider gjson.Result) []byte {
	type splice struct {
		at   gjson.Result
		with []byte
	}
	var reps [3]splice
	var adds [3][]byte
	nr, na := 0, 0
	set := func(v gjson.Result, want string, enc []byte, key string) {
		if v.Str == want {
			return
		}
		if v.Exists() {
			reps[nr] = splice{v, enc}
			nr++
			return
		}
		a := make([]byte, 0, len(key)+len(enc)+4)
		a = append(a, ',', '"')
		a = append(a, key...)
		a = append(a, '"', ':')
		adds[na] = append(a, enc...)
		na++
	}
	set(id, s.id.GenID, s.genID, "id")
	set(model, s.id.Model, s.model, "model")
	set(provider, s.id.Provider, s.provider, "provider")
	if nr == 0 && na == 0 && !addCreated {
		return ch
	}
	// Splices in the order they are in the chunk.
	for i := 1; i < nr; i++ {
		for j := i; j > 0 && reps[j].at.Index < reps[j-1].at.Index; j-- {
			reps[j], reps[j-1] = reps[j-1], reps[j]
		}
	}
	end := len(ch)
	appending := addCreated || na > 0
	if appending {
		// sjson appends before the object's last '}' and drops what
		// follows it.
		for end > 0 && ch[end-1] != '}' {
			end--
		}
		end--
	}
	out := make([]byte, 0, len(ch)+len(s.genID)+len(s.model)+len(s.provider)+48)
	at := 0
	for _, r := range reps[:nr] {
		out = append(out, ch[at:r.at.Index]...)
		out = append(out, r.with...)
		at = r.at.Index + len(r.at.Raw)
	}
	out = append(out, ch[at:end]...)
	if !appending {
		return out
	}
	if addCreated {
		out = append(out, `,"created":`...)
		out = strconv.AppendInt(out, s.now(), 10)
	}
	for _, a := range adds[:na] {
		out = append(out, a...)
	}
	return append(out, '}')
}

// appendStringify encodes s as sjson.SetBytes encodes a string value.
func appendStringify(buf []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > 0x7f || s[i] == '"' || s[i] == '\\' {
			plain = false
			break
		}
	}
	if !plain {
		b, _ := json.Marshal(s)
		return append(buf, b...)
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
