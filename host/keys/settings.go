package keys

import "encoding/json"

// settings is the account's record for reading its settings on the
// request path: cached (Store.accounts), read from the store on a miss;
// nil when it cannot be read (the callers then answer the defaults).
func (s *Store) settings(accountID string) *Account {
	if v, ok := s.accounts.Load(accountID); ok {
		return v.(*Account)
	}
	a, err := s.Account(accountID)
	if err != nil {
		return nil
	}
	s.accounts.Store(accountID, a)
	return a
}

// setSetting applies fn to the stored account and, once that committed,
// drops the cached record, so this instance's next request reads the new
// setting (other instances drop theirs on the notification).
func (s *Store) setSetting(accountID string, fn func(*Account)) error {
	err := s.updateAccount(accountID, fn)
	if err == nil {
		s.accounts.Delete(accountID)
	}
	return err
}

// LogContent reports whether the account's request log lines carry the
// prompt and completion text: off unless the operator turned it on for the
// account (SetLogContent), since prompts are the tenant's data.
func (s *Store) LogContent(accountID string) bool {
	a := s.settings(accountID)
	return a != nil && a.LogContent
}

// SetLogContent turns content logging on or off for the account.
func (s *Store) SetLogContent(accountID string, on bool) error {
	return s.setSetting(accountID, func(a *Account) { a.LogContent = on })
}

// StoreContent is the account's own choice of whether the prompt and
// completion of its generations are stored for GET /generation/content:
// nil when it made none (the operator's default applies, host/content).
func (s *Store) StoreContent(accountID string) *bool {
	if a := s.settings(accountID); a != nil {
		return a.StoreContent
	}
	return nil
}

// SetStoreContent records the account's choice; nil returns it to the
// operator's default.
func (s *Store) SetStoreContent(accountID string, on *bool) error {
	return s.setSetting(accountID, func(a *Account) { a.StoreContent = on })
}

// ResponseCache is the account's default of the response cache (the
// options object of the cache plugin's plugins[] item), nil when it set
// none.
func (s *Store) ResponseCache(accountID string) json.RawMessage {
	if a := s.settings(accountID); a != nil {
		return a.ResponseCache
	}
	return nil
}

// SetResponseCache records the account's default; nil removes it. The
// caller checked opts against the cache plugin's config_schema.
func (s *Store) SetResponseCache(accountID string, opts json.RawMessage) error {
	return s.setSetting(accountID, func(a *Account) { a.ResponseCache = opts })
}

// SetKeyResponseCache records key hash's own default of the response
// cache, over its account's; nil returns the key to the account's.
func (s *Store) SetKeyResponseCache(hash string, opts json.RawMessage) (*Key, error) {
	return s.Update(hash, func(k *Key) error { k.ResponseCache = opts; return nil })
}
