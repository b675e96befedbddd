package gitauth

import (
	"context"
	"sync/atomic"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingReader counts the reads that reach it.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestCredentialsReadSecretsAgainOnlyWhenTheyChange: an unchanged Secret is
// not read again; a changed one is, at the next call; a broken or missing
// one gives an error naming the Secret, without its data.
func TestCredentialsReadSecretsAgainOnlyWhenTheyChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "flux-system", Name: "git"}
	signKey := types.NamespacedName{Namespace: "flux-system", Name: "signing"}
	private, _ := sshKey(t, "")
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Data: map[string][]byte{"username": []byte("bot"), "password": []byte("first-password")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: signKey.Namespace, Name: signKey.Name},
			Data: map[string][]byte{"identity": private}},
	).Build()
	live := &countingReader{Reader: c}
	creds := &Credentials{Cached: c, Live: live, URL: "https://git.example.com/fleet.git", AuthSecret: &key, SigningSecret: &signKey}

	auth, err := creds.Auth(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "bot", Password: "first-password"}))
	_, err = creds.Auth(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(live.gets.Load()).To(BeEquivalentTo(1), "an unchanged Secret is not read again")

	update := func(data map[string][]byte) {
		s := &corev1.Secret{}
		g.Expect(c.Get(ctx, key, s)).To(Succeed())
		s.Data = data
		g.Expect(c.Update(ctx, s)).To(Succeed())
	}
	update(map[string][]byte{"username": []byte("bot"), "password": []byte("second-password")})
	auth, err = creds.Auth(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "bot", Password: "second-password"}))
	g.Expect(live.gets.Load()).To(BeEquivalentTo(2))

	update(map[string][]byte{"identity": []byte("garbage-identity-data")})
	_, err = creds.Auth(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("the Git credentials Secret flux-system/git: \"identity\" is not an SSH private key")))
	g.Expect(err.Error()).NotTo(ContainSubstring("garbage-identity-data"))
	_, again := creds.Auth(ctx)
	g.Expect(again).To(Equal(err), "the broken Secret's error stays until it changes")
	g.Expect(live.gets.Load()).To(BeEquivalentTo(3))

	signer, err := creds.Signer(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Describe(signer)).To(HavePrefix("SSH key SHA256:"))

	g.Expect(c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})).To(Succeed())
	_, err = creds.Auth(ctx)
	g.Expect(err).To(MatchError("the Git credentials Secret flux-system/git does not exist"))

	none := &Credentials{Live: live}
	a, err := none.Auth(ctx)
	g.Expect(a, err).To(BeNil())
	s, err := none.Signer(ctx)
	g.Expect(s, err).To(BeNil())
}
