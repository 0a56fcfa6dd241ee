// Package certs makes the TLS material of a run at run time: a small certificate
// authority (ECDSA P-256, crypto/x509) that issues leaf certificates for the loopback
// listener, each with a serial and common name the scenario chose, so a handshake names
// the certificate it presented. Nothing private is ever written to the repository: the
// keys live in memory for one run.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// Leaf is an issued certificate and its key, PEM encoded, with the serial and common
// name it was issued with.
type Leaf struct {
	CertPEM []byte
	KeyPEM  []byte
	Serial  int64
	CN      string
}

// CA is a run's certificate authority. Issue is memoized by (common name, serial): the
// same request gets the same bytes, so a resource built twice hashes the same.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu     sync.Mutex
	issued map[leafKey]Leaf
}

type leafKey struct {
	cn     string
	serial int64
}

// validity bounds every certificate of a run: issued a minute in the past (clock skew)
// for a day.
const validity = 24 * time.Hour

// NewCA makes a CA with a fresh key, named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"xds-workbench"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	return &CA{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der), issued: map[leafKey]Leaf{}}, nil
}

// CertPEM is the CA's certificate, PEM encoded.
func (c *CA) CertPEM() []byte { return c.certPEM }

// Pool is a pool holding only the CA: what a client of the run trusts (nil for a nil
// CA: the system's roots).
func (c *CA) Pool() *x509.CertPool {
	if c == nil {
		return nil
	}
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

// Issue returns the leaf certificate for cn with serial (> 1; serial 1 is the CA's),
// valid for 127.0.0.1 and localhost, issuing it on first use.
func (c *CA) Issue(cn string, serial int64) (Leaf, error) {
	if serial <= 1 {
		return Leaf{}, fmt.Errorf("issue %q: serial %d: use 2 or more (1 is the CA's)", cn, serial)
	}
	if cn == "" {
		return Leaf{}, errors.New("issue: empty common name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.issued[leafKey{cn, serial}]; ok {
		return l, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Leaf{}, fmt.Errorf("issue %q: key: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"xds-workbench"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", cn},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return Leaf{}, fmt.Errorf("issue %q: %w", cn, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Leaf{}, fmt.Errorf("issue %q: key: %w", cn, err)
	}
	l := Leaf{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("EC PRIVATE KEY", kder), Serial: serial, CN: cn}
	c.issued[leafKey{cn, serial}] = l
	return l, nil
}

// Garbage is PEM-looking bytes that are no certificate: the deliberately invalid one.
var Garbage = []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")

// Check parses a PEM certificate chain and its key and says why they are no usable
// pair: no CERTIFICATE block, a block that is no certificate, a key that does not
// parse or does not match. It is what Envoy would reject (and NACK) on an SDS update.
func Check(certPEM, keyPEM []byte) error {
	var certs []*x509.Certificate
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Errorf("certificate chain: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return errors.New("certificate chain: no PEM CERTIFICATE block")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return errors.New("private key: no PEM block")
	}
	key, err := parseKey(kb.Bytes)
	if err != nil {
		return fmt.Errorf("private key: %w", err)
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return errors.New("private key does not match the leaf certificate")
	}
	return nil
}

func parseKey(der []byte) (crypto.Signer, error) {
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	return s, nil
}

// Describe names a certificate as the probes report it: its serial in decimal and
// its common name.
func Describe(c *x509.Certificate) (serial, cn string) {
	return c.SerialNumber.String(), c.Subject.CommonName
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
