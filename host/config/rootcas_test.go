package config

import "testing"

// modules.http.root_cas is read from the file (the gateway loads the PEM
// files at start: plugins/file-parser/fileparsertest, TestRootCAsConfig).
func TestModulesRootCAs(t *testing.T) {
	c, err := Parse([]byte("modules: {http: {root_cas: [/etc/intranet-ca.pem, ca2.pem]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Modules.HTTP.RootCAs; len(got) != 2 || got[0] != "/etc/intranet-ca.pem" || got[1] != "ca2.pem" {
		t.Fatalf("root_cas %v", got)
	}
	if c, err = Parse([]byte("modules: {}\n")); err != nil || len(c.Modules.HTTP.RootCAs) != 0 {
		t.Fatalf("default root_cas %v", err)
	}
}
