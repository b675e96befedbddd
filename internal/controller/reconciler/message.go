package reconciler

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fluxcd/pkg/runtime/conditions"
)

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

// MaxConditionMessage bounds every condition message a reconciler writes:
// messages that list what a user wrote (clusters, prerequisites, waiting
// workspaces) would otherwise grow with the input until the status can no
// longer be written.
const MaxConditionMessage = 2048

// Enumerate joins items with sep, listing at most max of them and saying
// how many more there are.
func Enumerate(items []string, sep string, max int) string {
	if len(items) <= max {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s… and %d more", strings.Join(items[:max], sep), sep, len(items)-max)
}

// boundConditions truncates the messages of an object's conditions to
// MaxConditionMessage.
func boundConditions(obj conditions.Setter) {
	conds := obj.GetConditions()
	changed := false
	for i := range conds {
		if len(conds[i].Message) > MaxConditionMessage {
			conds[i].Message = Truncate(conds[i].Message, MaxConditionMessage)
			changed = true
		}
	}
	if changed {
		obj.SetConditions(conds)
	}
}
