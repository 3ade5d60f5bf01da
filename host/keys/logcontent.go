package keys

// LogContent reports whether the account's request log lines carry the
// prompt and completion text: off unless the operator turned it on for the
// account (SetLogContent), since prompts are the tenant's data.
func (s *Store) LogContent(accountID string) bool {
	if v, ok := s.logContent.Load(accountID); ok {
		return v.(bool)
	}
	a, err := s.Account(accountID)
	if err != nil {
		return false
	}
	s.logContent.Store(accountID, a.LogContent)
	return a.LogContent
}

// SetLogContent turns content logging on or off for the account.
func (s *Store) SetLogContent(accountID string, on bool) error {
	err := s.updateAccount(accountID, func(a *Account) { a.LogContent = on })
	if err == nil {
		s.logContent.Store(accountID, on)
	}
	return err
}
