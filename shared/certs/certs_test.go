package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func TestIssueVerifiesAgainstCA(t *testing.T) {
	ca, err := NewCA("lab-ca")
	if err != nil {
		t.Fatal(err)
	}
	l, err := ca.Issue("quote-v1", 101)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(l.CertPEM, l.KeyPEM); err != nil {
		t.Fatalf("Check: %v", err)
	}
	b, _ := pem.Decode(l.CertPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if s, cn := Describe(c); s != "101" || cn != "quote-v1" {
		t.Fatalf("Describe = %s %s, want 101 quote-v1", s, cn)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "127.0.0.1"}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if _, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		t.Fatalf("X509KeyPair: %v", err)
	}
	again, err := ca.Issue("quote-v1", 101)
	if err != nil || string(again.CertPEM) != string(l.CertPEM) {
		t.Fatalf("Issue is not memoized: %v", err)
	}
}

func TestCheckRefuses(t *testing.T) {
	ca, err := NewCA("lab-ca")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ca.Issue("a", 2)
	b, _ := ca.Issue("b", 3)
	for name, c := range map[string][2][]byte{
		"garbage":    {Garbage, a.KeyPEM},
		"empty":      {nil, a.KeyPEM},
		"no key":     {a.CertPEM, nil},
		"wrong key":  {a.CertPEM, b.KeyPEM},
		"key as pem": {a.KeyPEM, a.KeyPEM},
	} {
		if err := Check(c[0], c[1]); err == nil {
			t.Errorf("%s: Check accepted it", name)
		}
	}
	if _, err := ca.Issue("x", 1); err == nil {
		t.Error("serial 1 accepted")
	}
}
