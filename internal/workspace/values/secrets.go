package values

import (
	"bytes"
	"fmt"
	"slices"
	"sort"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// SplitSecrets keeps secret values out of the inline values: it moves the
// value at the helmValuePath of every field of type secret out of values
// into a separate tree of the same nested shape. public is values without
// them, with the maps that the moves left empty removed; secret holds them
// (for a Secret that the release reads through valuesFrom). A path with no
// value is skipped; a path that holds a map moves the whole map. Both
// results are deep copies, never nil; values is not modified.
//
// A helmValuePath uses ParsePath's syntax; one that does not parse is an
// error naming the path (and never the value).
func SplitSecrets(values map[string]any, fields []workspacesv1.UserFacingConfigField) (public map[string]any, secret map[string]any, err error) {
	var paths [][]string
	for _, f := range fields {
		if f.Type != workspacesv1.UserFacingConfigSecret {
			continue
		}
		segs, err := ParsePath(f.HelmValuePath)
		if err != nil {
			return nil, nil, fmt.Errorf("userFacingConfig helmValuePath: %w", err)
		}
		paths = append(paths, segs)
	}
	// Ancestors first: once a map has moved, the paths inside it find
	// nothing left in public, and the secret tree already holds them.
	sort.SliceStable(paths, func(i, j int) bool { return len(paths[i]) < len(paths[j]) })

	public = deepCopyMap(values)
	if public == nil {
		public = map[string]any{}
	}
	secret = map[string]any{}
	for _, segs := range paths {
		v, ok := LookupPath(public, segs)
		if !ok {
			continue
		}
		SetPath(secret, segs, v) // v is public's copy, about to leave it
		deletePath(public, segs)
	}
	return public, secret, nil
}

// CheckRequired returns the helmValuePaths of the required fields without
// a default whose value is in neither values nor secret, sorted. A value
// that is JSON null counts as missing, and so does the value of a path that
// does not parse (see ValidateFields). A default counts as unset when it is
// empty or JSON null. The inputs are not modified.
func CheckRequired(values map[string]any, secret map[string]any, fields []workspacesv1.UserFacingConfigField) []string {
	var missing []string
	for _, f := range fields {
		if !f.Required || hasDefault(f) {
			continue
		}
		segs, err := ParsePath(f.HelmValuePath)
		if err == nil && (present(values, segs) || present(secret, segs)) {
			continue
		}
		missing = append(missing, f.HelmValuePath)
	}
	sort.Strings(missing)
	return slices.Compact(missing)
}

// ValidateFields checks that every helmValuePath of a class's
// userFacingConfig parses; the error names the path.
func ValidateFields(fields []workspacesv1.UserFacingConfigField) error {
	for _, f := range fields {
		if _, err := ParsePath(f.HelmValuePath); err != nil {
			return fmt.Errorf("userFacingConfig helmValuePath: %w", err)
		}
	}
	return nil
}

// hasDefault reports whether a field has a non-null default.
func hasDefault(f workspacesv1.UserFacingConfigField) bool {
	if f.Default == nil {
		return false
	}
	raw := bytes.TrimSpace(f.Default.Raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// present reports whether values holds a non-null value at path.
func present(values map[string]any, path []string) bool {
	v, ok := LookupPath(values, path)
	return ok && v != nil
}
