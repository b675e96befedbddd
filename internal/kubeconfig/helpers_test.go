package kubeconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"time"
)

// testPEM holds a self-signed certificate and its key, PEM-encoded.
var testCert, testKey = selfSigned()

func selfSigned() (cert, key []byte) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		panic(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// doc is a kubeconfig with one cluster c, one user u and the current
// context x, whose cluster and user fields are given as YAML flow mappings'
// contents.
func doc(cluster, user string) string {
	return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {` + cluster + `}}]
users: [{name: u, user: {` + user + `}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
}

// server is a cluster's fields with the given server and the test CA.
func server(url string) string {
	return `server: "` + url + `", certificate-authority-data: ` + b64(testCert)
}

var okCluster = server("https://child.example:6443")
