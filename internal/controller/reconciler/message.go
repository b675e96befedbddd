package reconciler

import "unicode/utf8"

// Truncate bounds a message to n bytes (at least 4), cutting at a rune
// boundary and ending it with "...", so that what a reconciler writes to a
// condition or an event stays within the API's limits whatever its input.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-3, 1)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
