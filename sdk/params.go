package sdk

import "github.com/tidwall/gjson"

// Params reads the optional parameters of a unified request for an
// adapter: a parameter the host named in ctx.drop (the endpoint does not
// support it) reads as absent, and so does a JSON null. Reuse one Params
// across calls: Load keeps the names in a fixed array unless there are
// more than 32, so the hot path does not allocate.
type Params struct {
	req   gjson.Result
	names []string
	buf   [32]string
}

// Load reads ctx.drop and the unified request body, and returns the
// parsed request (aliasing body).
func (p *Params) Load(ctx, body []byte) gjson.Result {
	p.req = gjson.Parse(unsafeString(body))
	p.names = p.buf[:0]
	Get(ctx, "drop").ForEach(func(_, v gjson.Result) bool {
		p.names = append(p.names, v.Str)
		return true
	})
	return p.req
}

// Dropped reports whether the host dropped the parameter.
func (p *Params) Dropped(name string) bool {
	for _, n := range p.names {
		if n == name {
			return true
		}
	}
	return false
}

// Get returns the parameter, or an absent result when it is dropped, null
// or not given.
func (p *Params) Get(name string) gjson.Result {
	if p.Dropped(name) {
		return gjson.Result{}
	}
	if v := p.req.Get(name); v.Type != gjson.Null {
		return v
	}
	return gjson.Result{}
}
