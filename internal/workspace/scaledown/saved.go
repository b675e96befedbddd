package scaledown

import (
	"fmt"
	"strconv"
)

const (
	// ReplicasAnnotation holds the replicas a stopped controller had before Stop.
	ReplicasAnnotation = "apiary.exalsius.ai/stopped-replicas"
	// SuspendAnnotation holds the spec.suspend a CronJob had before Stop.
	SuspendAnnotation = "apiary.exalsius.ai/stopped-suspend"

	// MaxSavedReplicas bounds the replicas Start restores.
	MaxSavedReplicas = 10000
	// fallbackReplicas is what Start restores when the saved count is unreadable.
	fallbackReplicas = 1
)

// formatReplicas is the annotation value that saves n replicas.
func formatReplicas(n int64) string { return strconv.FormatInt(n, 10) }

// parseReplicas reads a saved replica count strictly: decimal digits without
// a sign or a leading zero, between 1 and MaxSavedReplicas. Any other value
// yields fallbackReplicas and an error saying why.
func parseReplicas(v string) (int64, error) {
	bad := func(why string) (int64, error) {
		return fallbackReplicas, fmt.Errorf("saved replicas %q %s; restoring %d", clip(v), why, fallbackReplicas)
	}
	if v == "" || len(v) > len(strconv.Itoa(MaxSavedReplicas)) {
		return bad("is empty or too long")
	}
	if v[0] == '0' {
		return bad("is zero or has a leading zero")
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return bad("is not a decimal number")
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > MaxSavedReplicas {
		return bad(fmt.Sprintf("is above %d", MaxSavedReplicas))
	}
	return n, nil
}

// parseSuspend reads a CronJob's saved spec.suspend; any value but "true"
// and "false" yields false (the CronJob runs again) and an error.
func parseSuspend(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("saved suspend %q is neither true nor false; resuming", clip(v))
}

// clip bounds a tenant-written value quoted in a message.
func clip(v string) string {
	const limit = 32
	if len(v) > limit {
		return v[:limit] + "..."
	}
	return v
}
