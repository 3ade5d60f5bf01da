package server

import (
	"context"
	"sync/atomic"

	"github.com/switchyard/switchyard/host/billing"
	"github.com/switchyard/switchyard/host/keys"
)

// SubChat is, for tests, the CallEnv.Chat a request of key with id
// parentID would carry, and what its sub-requests added to the request's
// cost so far.
func (s *Server) SubChat(key *keys.Key, parentID string) (func(context.Context, []byte) (int, []byte, error), func() billing.Nanos) {
	req := &chatRequest{key: key, spend: &spend{}}
	return s.subChat(req, parentID, req.spend, new(atomic.Int32)), func() billing.Nanos {
		req.spend.mu.Lock()
		defer req.spend.mu.Unlock()
		return req.spend.subCharged
	}
}
