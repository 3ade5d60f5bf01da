// Package anchor runs a plugin evaluation's anchor — a Node script beside
// the npm packages it compares against, under examples/clients/node — over
// the same inputs the plugin gets (docs/plugins.md, "Quality"): one JSON
// object a line in, one a line out, each answer found by its "id". Only
// the evaluation tests use it.
package anchor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Run runs `node script` in dir with inputs as JSON lines on its standard
// input and returns the lines it writes, decoded into T, by their "id".
// why says why the anchor cannot run here — node is not installed, or a
// package of need is missing from dir's node_modules — and err why it
// failed when it ran: the script's failure with its standard error, or a
// line that does not decode.
func Run[T any](dir, script string, need []string, inputs []any) (res map[string]T, why string, err error) {
	node, lerr := exec.LookPath("node")
	if lerr != nil {
		return nil, "node is not installed (make deps installs it)", nil
	}
	for _, p := range need {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); serr != nil {
			return nil, filepath.ToSlash(filepath.Join(dir, "node_modules", p)) + " is missing (run `make clients`, part of `make test`)", nil
		}
	}
	var in bytes.Buffer
	for _, v := range inputs {
		b, merr := json.Marshal(v)
		if merr != nil {
			return nil, "", merr
		}
		in.Write(b)
		in.WriteByte('\n')
	}
	cmd := exec.Command(node, script)
	cmd.Dir, cmd.Stdin = dir, &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, rerr := cmd.Output()
	if rerr != nil {
		return nil, "", fmt.Errorf("%v\n%s", rerr, stderr.String())
	}
	res = map[string]T{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var id struct {
			ID string `json:"id"`
		}
		var v T
		if err := json.Unmarshal(line, &id); err != nil {
			return nil, "", fmt.Errorf("output %q: %w", line, err)
		}
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, "", fmt.Errorf("output %q: %w", line, err)
		}
		res[id.ID] = v
	}
	return res, "", nil
}
