package gitauth

import (
	"context"
	"fmt"
	"sync"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Credentials are the auth method and the commit signer of one Git clone,
// from a credentials Secret and a signing key Secret. Each call compares
// the Secret's resourceVersion in the manager's cache (which holds Secrets
// without their data) with the one last parsed, and reads and parses the
// Secret again, uncached, only when it changed: a rotated Secret applies
// at the next fetch, push or commit, and an unchanged one costs no API
// request. It implements gitrepo.Credentials.
type Credentials struct {
	// Cached reads the Secrets' metadata: the manager's cache. Nil reads
	// every time through Live.
	Cached client.Reader
	// Live reads the Secrets' data, uncached.
	Live client.Reader
	// URL of the repository, for the user of SSH URLs.
	URL string
	// AuthSecret names the credentials Secret (Flux's format); nil for
	// anonymous access.
	AuthSecret *types.NamespacedName
	// SigningSecret names the signing key Secret; nil for unsigned commits.
	SigningSecret *types.NamespacedName
	// Logger says when a Secret was read again, without its data.
	Logger logr.Logger

	auth   parsed[transport.AuthMethod]
	signer parsed[git.Signer]
}

// Auth returns the auth method of the current credentials Secret.
func (c *Credentials) Auth(ctx context.Context) (transport.AuthMethod, error) {
	if c.AuthSecret == nil {
		return nil, nil
	}
	return c.auth.get(ctx, c, *c.AuthSecret, "Git credentials", func(data map[string][]byte) (transport.AuthMethod, string, error) {
		a, err := Auth(data, c.URL)
		if err != nil {
			return nil, "", err
		}
		return a, a.Name(), nil
	})
}

// Signer returns the signer of the current signing key Secret.
func (c *Credentials) Signer(ctx context.Context) (git.Signer, error) {
	if c.SigningSecret == nil {
		return nil, nil
	}
	return c.signer.get(ctx, c, *c.SigningSecret, "signing key", func(data map[string][]byte) (git.Signer, string, error) {
		s, err := Signer(data)
		if err != nil {
			return nil, "", err
		}
		return s, Describe(s), nil
	})
}

// parsed is what was made of one Secret at one resourceVersion.
type parsed[T any] struct {
	mu      sync.Mutex
	version string // uid/resourceVersion parsed; "" before the first read
	val     T
	err     error
}

func (p *parsed[T]) get(ctx context.Context, c *Credentials, key types.NamespacedName, what string,
	parse func(map[string][]byte) (T, string, error)) (T, error) {
	var zero T
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.Cached != nil {
		meta := &corev1.Secret{}
		if err := c.Cached.Get(ctx, key, meta); err != nil {
			return zero, readError(what, key, err)
		}
		if p.version != "" && p.version == versionOf(meta) {
			return p.val, p.err
		}
	}
	s := &corev1.Secret{}
	if err := c.Live.Get(ctx, key, s); err != nil {
		return zero, readError(what, key, err)
	}
	val, desc, err := parse(s.Data)
	if err != nil {
		err = fmt.Errorf("the %s Secret %s: %w", what, key, err)
		if c.Logger.GetSink() != nil {
			c.Logger.Error(err, "the Secret cannot be used", "secret", key.String(), "resourceVersion", s.ResourceVersion)
		}
	} else if c.Logger.GetSink() != nil && p.version != "" && p.version != versionOf(s) {
		c.Logger.Info("read the changed Secret", "secret", key.String(), "resourceVersion", s.ResourceVersion, "uses", desc)
	}
	p.version, p.val, p.err = versionOf(s), val, err
	return val, err
}

func versionOf(s *corev1.Secret) string { return string(s.UID) + "/" + s.ResourceVersion }

func readError(what string, key types.NamespacedName, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the %s Secret %s does not exist", what, key)
	}
	return fmt.Errorf("reading the %s Secret %s: %w", what, key, err)
}
