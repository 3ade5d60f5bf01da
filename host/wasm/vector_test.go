package wasm

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/abi"
	"github.com/switchyard/switchyard/abi/manifest"
	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/vecindex"
)

// vector_put and vector_search are scoped like kv: by the module, its
// publisher and the account of the request, which the host fills; a
// module names partitions only inside that scope, so no account reads or
// overwrites another's vectors. The calls go through hostCall, as a
// guest's do (grants checked there).
func TestVectorHostFunctionsScoped(t *testing.T) {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "v.db"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := vecindex.Open(db, vecindex.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close(); _ = db.Close() })
	e := &Engine{cfg: Config{Vectors: ix}}
	man := func(grants string) *manifest.Manifest {
		m, err := manifest.Parse([]byte(`{"name":"response-cache","version":"1.0.0","abi":1,"kind":"plugin","hooks":["pre_request"],"grants":{"host_functions":` + grants + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	gw := &Module{Manifest: man(`["vector"]`)}
	tenant := &Module{Manifest: man(`["vector"]`), account: "publisher"}
	ungranted := &Module{Manifest: man(`["kv"]`)}
	ctxA := WithCallEnv(context.Background(), &CallEnv{Account: "a"})
	ctxB := WithCallEnv(context.Background(), &CallEnv{Account: "b"})
	vec := vecindex.Bytes([]float32{1, 2, 3})
	frame := func(fs ...[]byte) [][]byte { return fs }

	if out, code := e.hostCall(ctxA, gw, abi.HostVectorPut, frame([]byte("a"), []byte("q1"), []byte("tag"), vec, []byte("60")), nil); code < 0 {
		t.Fatalf("put: %d %q", code, out)
	}
	search := func(ctx context.Context, m *Module, part string) (string, int64) {
		out, code := e.hostCall(ctx, m, abi.HostVectorSearch, frame([]byte(part), []byte("tag"), vec, []byte("0.9")), nil)
		if code < 0 {
			return "", code
		}
		f, _ := abi.Fields(nil, out)
		return string(f[0]) + " " + string(f[1]), code
	}
	cases := []struct {
		name     string
		ctx      context.Context
		mod      *Module
		part     string
		want     string
		wantCode int64
	}{
		{"own account", ctxA, gw, "a", "q1 1.0000", 0},
		{"another account, same partition name", ctxB, gw, "a", "", abi.HostNotFound},
		{"a tenant's module of the same name", ctxA, tenant, "a", "", abi.HostNotFound},
		{"another partition", ctxA, gw, "k:other", "", abi.HostNotFound},
		{"not granted", ctxA, ungranted, "a", "", abi.HostDenied},
	}
	for _, c := range cases {
		got, code := search(c.ctx, c.mod, c.part)
		if got != c.want || (c.wantCode != 0 && code != c.wantCode) {
			t.Errorf("%s: got %q code %d, want %q code %d", c.name, got, code, c.want, c.wantCode)
		}
	}
	// Another account's put under the same partition and id leaves a's.
	if _, code := e.hostCall(ctxB, gw, abi.HostVectorPut, frame([]byte("a"), []byte("q1"), []byte("tag"), vecindex.Bytes([]float32{-1, 0, 0}), []byte("60")), nil); code < 0 {
		t.Fatal("b's put failed")
	}
	if got, _ := search(ctxA, gw, "a"); got != "q1 1.0000" {
		t.Errorf("after b's put a reads %q", got)
	}
	for _, bad := range [][][]byte{
		frame([]byte("a"), []byte("q"), []byte("t"), []byte{1, 2, 3}, []byte("0")),      // not float32s
		frame([]byte("a"), []byte("q"), []byte("t"), vecindex.Bytes([]float32{0}), nil), // zero vector
		frame([]byte("a"), []byte("q"), []byte("t"), vec, []byte("-"+strconv.Itoa(1))),  // bad ttl
	} {
		if _, code := e.hostCall(ctxA, gw, abi.HostVectorPut, bad, nil); code != abi.HostFailed {
			t.Errorf("bad put %q: code %d, want HostFailed", bad, code)
		}
	}
}
