// Package naming derives the deterministic names and label values of the
// objects Apiary creates, bounded to Kubernetes' length limits with a stable
// hash suffix so that long inputs never collide or fail validation.
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNameLength is the length Apiary bounds object names to: a DNS-1123 label,
// also the limit of the label values k0rdent and Sveltos stamp names into.
const MaxNameLength = validation.DNS1123LabelMaxLength

// hashLength is the number of hex characters of the hash suffix.
const hashLength = 8

// Bounded returns name unchanged when it fits MaxNameLength; otherwise a
// prefix of it, trimmed of trailing '-' and '.', followed by '-' and the first
// eight hex characters of the SHA-256 of the whole name.
func Bounded(name string) string {
	return BoundedTo(name, MaxNameLength)
}

// BoundedTo is Bounded with another limit (at least 16).
func BoundedTo(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:hashLength]
	prefix := strings.TrimRight(name[:limit-hashLength-1], "-.")
	return prefix + "-" + suffix
}

// ClusterDeploymentName is the name of the ClusterDeployment of a Colony entry.
func ClusterDeploymentName(colony, cluster string) string {
	return Bounded(colony + "-" + cluster)
}

// KubeconfigsSecretName is the name of a Colony's aggregated kubeconfig Secret.
func KubeconfigsSecretName(colony string) string {
	return BoundedTo(colony+"-kubeconfigs", validation.DNS1123SubdomainMaxLength)
}

// LabelValue returns s when it is a valid label value, and otherwise a
// label-safe value of at most 63 characters made of a readable prefix of s
// and a hash of the whole of s.
func LabelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := hex.EncodeToString(sum[:])[:10]
	prefix := []byte(s)
	for i, c := range prefix {
		if !isLabelChar(c) {
			prefix[i] = '-'
		}
	}
	if len(prefix) > validation.LabelValueMaxLength-len(suffix)-1 {
		prefix = prefix[:validation.LabelValueMaxLength-len(suffix)-1]
	}
	p := strings.TrimFunc(string(prefix), func(r rune) bool { return !isAlnum(byte(r)) })
	if p == "" {
		return suffix
	}
	return p + "-" + suffix
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLabelChar(c byte) bool { return isAlnum(c) || c == '-' || c == '_' || c == '.' }

// IsDNSLabel reports whether s is a DNS-1123 label.
func IsDNSLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// waypointSuffix ends the name of a child cluster's waypoint Gateway.
const waypointSuffix = "-waypoint"

// WaypointName is the name of the per-child waypoint Gateway of
// ClusterDeployment cd (the exalsius operator's ADR-0005): "<cd>-waypoint",
// the same on the regional and the child cluster, so that administrators
// and Apiary agree on it without coordination. When that is longer than
// MaxNameLength, cd is cut to its first 45 characters, followed by '-', the
// first eight hex characters of the SHA-256 of cd and "-waypoint": the
// operator's rule, kept exactly (nothing is trimmed from the cut), so both
// controllers expect the same Gateway.
func WaypointName(cd string) string {
	name := cd + waypointSuffix
	if len(name) <= MaxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(cd))
	keep := MaxNameLength - 1 - hashLength - len(waypointSuffix)
	return cd[:keep] + "-" + hex.EncodeToString(sum[:])[:hashLength] + waypointSuffix
}

// ParseKey parses the "<namespace>/<name>" of a namespaced object, as
// Apiary records it in status; both parts are required.
func ParseKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
