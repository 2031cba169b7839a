package fleet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/safefile"
)

// serverTLS loads (or makes) the hub's CA and a server certificate for
// host, and returns the server's TLS config and the CA's fingerprint.
func serverTLS(dir, host string) (*tls.Config, string, error) {
	caCert, caKey, err := loadOrMakeCA(dir)
	if err != nil {
		return nil, "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "corral fleet hub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(5, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	if h, err := os.Hostname(); err == nil {
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, "", fmt.Errorf("fleet TLS: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der, caCert.Raw}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, Fingerprint(caCert.Raw), nil
}

// Fingerprint is a certificate's SHA-256, hex.
func Fingerprint(der []byte) string {
	h := sha256.Sum256(der)
	return hex.EncodeToString(h[:])
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if cb, err := safefile.ReadOwned(certPath, safefile.StateMax); err == nil {
		kb, err := safefile.ReadOwned(keyPath, safefile.StateMax)
		if err != nil {
			return nil, nil, fmt.Errorf("fleet CA key: %w", err)
		}
		cp, _ := pem.Decode(cb)
		kp, _ := pem.Decode(kb)
		if cp == nil || kp == nil {
			return nil, nil, fmt.Errorf("fleet CA in %s is damaged; remove ca.pem and ca-key.pem to make a new one (members must join again)", dir)
		}
		cert, err := x509.ParseCertificate(cp.Bytes)
		if err != nil {
			return nil, nil, err
		}
		key, err := x509.ParseECPrivateKey(kp.Bytes)
		return cert, key, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "corral fleet CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// clientTLS trusts the server whose chain carries the CA with this
// fingerprint, and only it.
func clientTLS(fingerprint string) *tls.Config {
	fingerprint = strings.ToLower(strings.ReplaceAll(fingerprint, ":", ""))
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is checked below against the pinned CA instead of the
		// system's roots.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the fleet hub sent no certificate")
			}
			pool := x509.NewCertPool()
			found := false
			for _, c := range cs.PeerCertificates[1:] {
				if Fingerprint(c.Raw) == fingerprint {
					pool.AddCert(c)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("the fleet hub's CA is not the one the join command names (fingerprint %s…); check the address, or ask for a new join command", short(fingerprint))
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		},
	}
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}
