package scenario

import (
	"fmt"
	"sync"
	"time"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"go.yaml.in/yaml/v3"

	"github.com/xds-workbench/lab/shared/certs"
	"github.com/xds-workbench/lab/shared/resources"
)

// tlsRef is a secret a TLS listener names: where, and whether the scenario means it to
// be one it never defines (tls undefined: true).
type tlsRef struct {
	listener, secret string
	node             *yaml.Node
	undefinedOK      bool
}

// listenerTLS reads a short-form listener's tls: {secret: NAME, initial_fetch_timeout:
// 1s, undefined: true}: the listener terminates TLS with the certificate of SDS secret
// NAME, fetched over ADS.
func (p *parser) listenerTLS(f *fields, what string) (resources.ListenerTLS, error) {
	var t resources.ListenerTLS
	n := f.get("tls")
	if n == nil {
		return t, nil
	}
	tf, err := p.fields(n, what+" tls")
	if err != nil {
		return t, err
	}
	if t.Secret, err = tf.str("secret", true); err != nil {
		return t, err
	}
	if t.InitialFetchTimeout, err = tf.duration("initial_fetch_timeout", 100*time.Millisecond, time.Minute, 0); err != nil {
		return t, err
	}
	undef, err := tf.boolean("undefined")
	if err != nil {
		return t, err
	}
	if err := tf.done(); err != nil {
		return t, err
	}
	p.tlsRefs = append(p.tlsRefs, tlsRef{listener: what, secret: t.Secret, node: tf.key["secret"], undefinedOK: undef != nil && *undef})
	return t, nil
}

// secretForm is the short-form SDS secret: a TLS certificate issued at run time by the
// run's CA with the common name and serial given (cn: quote-v1, serial: 101), so a
// handshake names it; or (garbage: true, on a resource marked invalid) a PEM block that
// is no certificate, the deliberately invalid one.
func (p *parser) secretForm(f *fields, what, name string) (Item, error) {
	garbage, err := f.boolean("garbage")
	if err != nil {
		return Item{}, err
	}
	if garbage != nil && *garbage {
		if f.has("cn") || f.has("serial") {
			return Item{}, p.errf(f.n, "%s: a garbage secret has no cn or serial", what)
		}
		return Item{Type: resources.SDS, Name: name, build: func(env Env) (types.Resource, error) {
			ca, err := env.ca()
			if err != nil {
				return nil, err
			}
			l, err := ca.Issue("garbage", 2)
			if err != nil {
				return nil, err
			}
			return resources.BuildSecret(resources.SecretSpec{Name: name, CertPEM: certs.Garbage, KeyPEM: l.KeyPEM, Invalid: true})
		}}, nil
	}
	cn, err := f.str("cn", true)
	if err != nil {
		return Item{}, err
	}
	serial, ok, err := f.integer("serial", 2, 1<<30)
	if err != nil {
		return Item{}, err
	}
	if !ok {
		return Item{}, p.errf(f.n, "%s: \"serial\" is required (2 or more: the handshake reports it)", what)
	}
	return Item{Type: resources.SDS, Name: name, build: func(env Env) (types.Resource, error) {
		ca, err := env.ca()
		if err != nil {
			return nil, err
		}
		l, err := ca.Issue(cn, int64(serial))
		if err != nil {
			return nil, err
		}
		return resources.BuildSecret(resources.SecretSpec{Name: name, CertPEM: l.CertPEM, KeyPEM: l.KeyPEM})
	}}, nil
}

// checkSecretRefs refuses a TLS listener whose secret no resource of the scenario
// defines, unless the listener says it means that (tls undefined: true); such a listener
// would warm until its initial_fetch_timeout and then reset every handshake. A full-form
// listener's secrets are read from its filter chains.
func (p *parser) checkSecretRefs() error {
	defined := map[string]bool{}
	refs := p.tlsRefs
	env := checkEnv(p.sc.Backends)
	for id, r := range p.sc.Resources {
		for _, it := range r.Items {
			if it.Type == resources.SDS {
				defined[it.Name] = true
			}
			if it.Type != resources.LDS || r.Invalid {
				continue
			}
			m, err := it.Build(env)
			if err != nil {
				continue // reported where the resource was read
			}
			l, ok := m.(*listener.Listener)
			if !ok {
				continue
			}
			names, _ := resources.ListenerSecrets(l)
			for _, s := range names {
				refs = append(refs, tlsRef{listener: fmt.Sprintf("resource %q", id), secret: s})
			}
		}
	}
	for _, r := range refs {
		if !defined[r.secret] && !r.undefinedOK {
			return p.errf(r.node, "%s: TLS secret %q is defined by no resource of the scenario (define it with a secret resource, or say tls undefined: true to mean it)", r.listener, r.secret)
		}
	}
	return nil
}

// checkCA is the CA Parse builds secrets against; a run has its own (Env.CA).
var checkCA = sync.OnceValues(func() (*certs.CA, error) { return certs.NewCA("xds-workbench parse check") })

// ca is the run's CA, or the parse check's when the run gave none.
func (env Env) ca() (*certs.CA, error) {
	if env.CA != nil {
		return env.CA, nil
	}
	return checkCA()
}
