package keys

// StoreContent is the account's own choice of whether the prompt and
// completion of its generations are stored for GET /generation/content:
// nil when it made none (the operator's default applies, host/content).
// It is read on every request of the account, so it is cached like the
// other account settings and dropped when any instance writes the account.
func (s *Store) StoreContent(accountID string) *bool {
	if v, ok := s.storeContent.Load(accountID); ok {
		return v.(*bool)
	}
	a, err := s.Account(accountID)
	if err != nil {
		return nil
	}
	s.storeContent.Store(accountID, a.StoreContent)
	return a.StoreContent
}

// SetStoreContent records the account's choice; nil returns it to the
// operator's default.
func (s *Store) SetStoreContent(accountID string, on *bool) error {
	err := s.updateAccount(accountID, func(a *Account) { a.StoreContent = on })
	if err == nil {
		s.storeContent.Store(accountID, on)
	}
	return err
}
