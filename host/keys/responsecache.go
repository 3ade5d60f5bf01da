package keys

import "encoding/json"

// ResponseCache is the account's default of the response cache (the
// options object of the cache plugin's plugins[] item), nil when it set
// none. It is read on every request of the account, so it is cached like
// the other account settings and dropped when any instance writes the
// account.
func (s *Store) ResponseCache(accountID string) json.RawMessage {
	if v, ok := s.responseCache.Load(accountID); ok {
		return v.(json.RawMessage)
	}
	a, err := s.Account(accountID)
	if err != nil {
		return nil
	}
	s.responseCache.Store(accountID, a.ResponseCache)
	return a.ResponseCache
}

// SetResponseCache records the account's default; nil removes it. The
// caller checked opts against the cache plugin's config_schema.
func (s *Store) SetResponseCache(accountID string, opts json.RawMessage) error {
	err := s.updateAccount(accountID, func(a *Account) { a.ResponseCache = opts })
	if err == nil {
		s.responseCache.Store(accountID, opts)
	}
	return err
}

// SetKeyResponseCache records key hash's own default of the response
// cache, over its account's; nil returns the key to the account's.
func (s *Store) SetKeyResponseCache(hash string, opts json.RawMessage) (*Key, error) {
	return s.Update(hash, func(k *Key) error { k.ResponseCache = opts; return nil })
}
