package values

import (
	"errors"
	"fmt"
	"sort"
)

// ErrReserved is the error of values that set a key under ReservedKey.
// What a chart reads there is what Apiary admitted and charged, so only
// Inject writes it.
var ErrReserved = errors.New("keys under " + ReservedKey + " are reserved for the resources and placement Apiary admits")

// ReservedPath reports whether values set anything under ReservedKey, and
// where: the path of the first leaf under it in key order, as FormatPath
// writes it (e.g. _exalsius.resources.perReplica.gpuCount); ReservedKey
// alone when it holds a scalar, a list or an empty map. It names keys only,
// never a value. values is not modified.
func ReservedPath(values map[string]any) (string, bool) {
	v, ok := values[ReservedKey]
	if !ok {
		return "", false
	}
	path := []string{ReservedKey}
	for {
		m, isMap := v.(map[string]any)
		if !isMap || len(m) == 0 {
			return FormatPath(path), true
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		path = append(path, keys[0])
		v = m[keys[0]]
	}
}

// CheckReserved returns an error wrapping ErrReserved that names the path
// (ReservedPath) when values set a key under ReservedKey, nil otherwise.
func CheckReserved(values map[string]any) error {
	if path, ok := ReservedPath(values); ok {
		return fmt.Errorf("%s is set: %w", path, ErrReserved)
	}
	return nil
}
