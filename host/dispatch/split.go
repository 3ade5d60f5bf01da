package dispatch

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/host/apierr"
	"github.com/switchyard/switchyard/host/catalog"
	"github.com/switchyard/switchyard/host/wire"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// An embedding model whose API takes fewer inputs a call than a request
// holds (Titan Text Embeddings on Bedrock takes one) gets the request in
// parts: its adapter's manifest caps the inputs a call takes
// (embed_inputs), the host sends one call per part — at most partsAtOnce
// at a time, so a request of many inputs does not open as many
// connections — and joins the answers in input order, usage summed. The
// parts are one attempt: one failing fails the attempt (the others are
// cancelled), and the next endpoint is tried with the whole request.
const partsAtOnce = 4

// embedParts is body's input cut into parts of at most the inputs ep's
// adapter takes a call, each a body of its own with the number of inputs
// it holds; nil when the request fits one call.
func (d *Dispatcher) embedParts(ep *catalog.Endpoint, body []byte) ([][]byte, []int) {
	mod, release := d.Modules.Acquire(ep.Provider.Adapter)
	if mod == nil {
		return nil, nil
	}
	most := mod.Manifest.MaxEmbedInputs(ep.UpstreamModel)
	release()
	input := gjson.GetBytes(body, "input")
	if most == 0 || !input.IsArray() {
		return nil, nil
	}
	items := input.Array()
	if len(items) <= most || items[0].Type == gjson.Number {
		return nil, nil // fits, or one input of token ids
	}
	var parts [][]byte
	var sizes []int
	for i := 0; i < len(items); i += most {
		part := items[i:min(i+most, len(items))]
		raw := make([]string, len(part))
		for j, it := range part {
			raw[j] = it.Raw
		}
		b, err := sjson.SetRawBytes(body, "input", []byte("["+strings.Join(raw, ",")+"]"))
		if err != nil {
			return nil, nil
		}
		parts, sizes = append(parts, b), append(sizes, len(part))
	}
	return parts, sizes
}

// attemptParts sends each part to ep and reads it (job.ReadPart), and
// joins the answers. The call returned dates the attempt (its first part)
// or, on failure, the part that failed first.
func (d *Dispatcher) attemptParts(ctx context.Context, job *Job, ep *catalog.Endpoint, actx wire.AdapterCtx, parts [][]byte, sizes []int) (*Call, []byte, *apierr.Error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := time.Now()
	bodies := make([][]byte, len(parts))
	calls := make([]*Call, len(parts))
	var (
		mu      sync.Mutex
		failed  *apierr.Error
		failure *Call
		wg      sync.WaitGroup
	)
	slots := make(chan struct{}, partsAtOnce)
	for i := range parts {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				return
			}
			call, err := d.send(ctx, ep, abi.HookEmbedRequest, parts[i], actx, job.EchoSent, nil)
			if err == nil {
				bodies[i], err = job.ReadPart(sizes[i])(ctx, call)
				call.Close()
			}
			calls[i] = call
			if err != nil {
				mu.Lock()
				if failed == nil {
					failed, failure = err, call
					cancel()
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	if failed != nil {
		if failure == nil {
			failure = &Call{Started: started}
		}
		for _, c := range calls {
			if c != nil && c.sent {
				failure.sent = true // a part went out: the provider may bill it
			}
		}
		return failure, nil, failed
	}
	for _, b := range bodies {
		if b == nil { // the request ended before this part was sent
			return &Call{Started: started}, nil, &apierr.Error{Status: http.StatusBadGateway, Retryable: true,
				Message: "provider " + ep.Provider.Slug + ": the request ended before every part of its inputs was embedded"}
		}
	}
	return calls[0], joinEmbeddings(bodies), nil
}

// joinEmbeddings is the parts' answers (each normalised by ReadEmbeddings:
// its entries in order, indexed from 0) as one: entries re-indexed in
// input order, the first part's model and provider, and the usage summed
// when every part reports it (else none, and the gateway counts the
// tokens as for any answer without usage).
func joinEmbeddings(bodies [][]byte) []byte {
	out := []byte(`{"object":"list","data":[`)
	n := 0
	var prompt, total int64
	usage := true
	for _, b := range bodies {
		gjson.GetBytes(b, "data").ForEach(func(_, it gjson.Result) bool {
			if n > 0 {
				out = append(out, ',')
			}
			e, _ := sjson.SetBytes([]byte(it.Raw), "index", n)
			out = append(out, e...)
			n++
			return true
		})
		u := gjson.GetBytes(b, "usage")
		usage = usage && u.Get("prompt_tokens").Type == gjson.Number
		prompt += u.Get("prompt_tokens").Int()
		total += u.Get("total_tokens").Int()
	}
	out = append(out, ']', '}')
	first := gjson.ParseBytes(bodies[0])
	out, _ = sjson.SetBytes(out, "model", first.Get("model").Str)
	out, _ = sjson.SetBytes(out, "provider", first.Get("provider").Str)
	if usage {
		out, _ = sjson.SetRawBytes(out, "usage", []byte(`{"prompt_tokens":`+strconv.FormatInt(prompt, 10)+`,"total_tokens":`+strconv.FormatInt(total, 10)+`}`))
	}
	return out
}
