package gitrepo

import (
	"context"
	"errors"
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

var (
	// ErrCredentials marks credentials that could not be had or used
	// before talking to the server: a missing or malformed Secret.
	ErrCredentials = errors.New("the Git credentials cannot be used")
	// ErrSigningKey marks a commit signing key that could not be had or
	// used; nothing is committed without it.
	ErrSigningKey = errors.New("the commit signing key cannot be used")
)

// IsCredentials reports whether err means the credentials could not be used.
func IsCredentials(err error) bool { return errors.Is(err, ErrCredentials) }

// IsSigningKey reports whether err means the signing key could not be used.
func IsSigningKey(err error) bool { return errors.Is(err, ErrSigningKey) }

// Credentials hand out the auth method and the commit signer of the next
// fetch, push or commit, so that credentials rotated meanwhile are used at
// once. Errors must not hold secrets.
type Credentials interface {
	// Auth returns the auth method for the next fetch or push; nil for
	// anonymous access.
	Auth(ctx context.Context) (transport.AuthMethod, error)
	// Signer returns the signer of the next commit; nil for unsigned
	// commits.
	Signer(ctx context.Context) (git.Signer, error)
}

// auth is the auth method of the next fetch or push.
func (r *Repo) auth(ctx context.Context) (transport.AuthMethod, error) {
	if r.opts.Credentials == nil {
		return r.opts.Auth, nil
	}
	a, err := r.opts.Credentials.Auth(ctx)
	if err != nil {
		return nil, wrapOnce(ErrCredentials, err)
	}
	return a, nil
}

// commitOptions sets the signer of the next commit on opts.
func (r *Repo) sign(ctx context.Context, opts *git.CommitOptions) error {
	if r.opts.Credentials == nil {
		opts.Signer, opts.SignKey = r.opts.Signer, r.opts.SigningKey
		return nil
	}
	s, err := r.opts.Credentials.Signer(ctx)
	if err != nil {
		return wrapOnce(ErrSigningKey, err)
	}
	opts.Signer = s
	return nil
}

func wrapOnce(sentinel, err error) error {
	if errors.Is(err, sentinel) {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}
