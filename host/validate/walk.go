package validate

import (
	"sync"

	"github.com/switchyard/switchyard/host/jsonwalk"
	"github.com/tidwall/gjson"
)

// Bodies are walked with jsonwalk: every byte read once, strings skipped,
// not copied (see its package comment). Never read Str of a walked value
// directly: use text.

// validators are pooled with their index, so a request allocates nothing.
var validators = sync.Pool{New: func() any { return new(validator) }}

// maxPooledContainers keeps one huge body from pinning its index forever.
const maxPooledContainers = 1 << 16

func getValidator(s string) *validator {
	v := validators.Get().(*validator)
	v.Reset(s)
	v.depth, v.nulls, v.legacy, v.parts, v.messages = 0, false, false, false, 0
	return v
}

// done returns v to the pool; v must not be used after.
func (v *validator) done() {
	v.Reset("")
	if v.Containers() <= maxPooledContainers {
		validators.Put(v)
	}
}

// text is the unescaped content of a walked string value.
func text(x gjson.Result) string { return jsonwalk.Text(x) }
