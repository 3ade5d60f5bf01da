package store_test

import (
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/host/store"
	"github.com/switchyard/switchyard/host/store/storetest"
)

func openBolt(t testing.TB) store.DB {
	db, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBoltContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.DB { return openBolt(t) })
}
