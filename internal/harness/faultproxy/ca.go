package faultproxy

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// CA signs the proxies' server certificates. One CA can serve every proxy of a run,
// so children need a single extra trust anchor.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// Certificates live long enough for a long manual gate run, and no longer.
const certLifetime = 30 * 24 * time.Hour

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// NewCA mints a fresh CA (ECDSA P-256). Its key never leaves memory.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate proxy CA key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("proxy CA serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("flowtest fault proxy CA %x", sn.Bytes()[:4]), Organization: []string{"flowtest"}},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock skew between processes
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create proxy CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse proxy CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// LoadCA uses an existing CA (PEM certificate and PKCS#8, EC or PKCS#1 key), e.g. one
// an operator already trusts.
func LoadCA(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load proxy CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("load proxy CA: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("load proxy CA: certificate is not a CA")
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("load proxy CA: key cannot sign")
	}
	block, _ := pem.Decode(certPEM)
	return &CA{cert: cert, key: signer, certPEM: pem.EncodeToMemory(block)}, nil
}

// CertPEM is the CA certificate in PEM form.
func (c *CA) CertPEM() []byte { return bytes.Clone(c.certPEM) }

// WriteCertFile writes the CA certificate (PEM) to path.
func (c *CA) WriteCertFile(path string) error {
	if err := os.WriteFile(path, c.certPEM, 0o644); err != nil {
		return fmt.Errorf("write proxy CA certificate: %w", err)
	}
	return nil
}

// ServerCert issues a loopback server certificate (127.0.0.1, ::1, localhost) signed by the
// CA: a proxy of flowtest's own that is not a faultproxy.Proxy (the CSV steps' write-fault
// proxy) is trusted through the same bundle as every other proxy of the scenario.
func (c *CA) ServerCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generate proxy server key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("proxy server serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: "flowtest fault proxy", Organization: []string{"flowtest"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sign proxy server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: key}, nil
}

// WriteCABundle concatenates PEM certificate files into dst, e.g. the sandbox
// emulator's CA and the proxy CA, for a child's NODE_EXTRA_CA_CERTS or CA-file
// setting. Every input must hold at least one certificate.
func WriteCABundle(dst string, pemFiles ...string) error {
	if len(pemFiles) == 0 {
		return errors.New("write CA bundle: no input files")
	}
	var out bytes.Buffer
	for _, f := range pemFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("write CA bundle: %w", err)
		}
		n := 0
		for rest := data; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue // never copy a key into a bundle
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return fmt.Errorf("write CA bundle: %s: %w", f, err)
			}
			if err := pem.Encode(&out, b); err != nil {
				return fmt.Errorf("write CA bundle: %w", err)
			}
			n++
		}
		if n == 0 {
			return fmt.Errorf("write CA bundle: %s holds no PEM certificate", f)
		}
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write CA bundle: %w", err)
	}
	return nil
}
