package check

import (
	"crypto/sha256"
	"time"
)

// Memo remembers which content was refused under a key (a file's path) for
// a while, so that content refused once is not checked again (no request)
// until it changes or the memo's TTL passes; a new schema is seen after
// it. It holds at most Max entries and starts anew when full. Its user
// serializes access.
type Memo struct {
	ttl     time.Duration
	max     int
	entries map[string]memoEntry
}

type memoEntry struct {
	sum [sha256.Size]byte
	err error
	at  time.Time
}

// NewMemo returns a Memo that keeps a refusal for ttl, of at most max keys.
func NewMemo(ttl time.Duration, max int) *Memo {
	return &Memo{ttl: ttl, max: max, entries: map[string]memoEntry{}}
}

// Refused returns the refusal remembered for content under key at now, or
// nil.
func (m *Memo) Refused(key string, content []byte, now time.Time) error {
	e, ok := m.entries[key]
	if !ok || e.sum != sha256.Sum256(content) || now.Sub(e.at) >= m.ttl {
		return nil
	}
	return e.err
}

// Record keeps err as the outcome of checking content under key when it is
// a refusal (IsRefused); any other outcome forgets the key, so content that
// passed or could not be checked is checked again.
func (m *Memo) Record(key string, content []byte, err error, now time.Time) {
	if err == nil || !IsRefused(err) {
		delete(m.entries, key)
		return
	}
	if _, ok := m.entries[key]; !ok && len(m.entries) >= m.max {
		clear(m.entries)
	}
	m.entries[key] = memoEntry{sum: sha256.Sum256(content), err: err, at: now}
}

// Len returns how many refusals the memo holds.
func (m *Memo) Len() int { return len(m.entries) }
