package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gpipe/gpipe/operators"
)

// TestToken checks that every kind of call, unary and streaming, needs the
// bearer token, and that the server keeps serving those who have it.
func TestToken(t *testing.T) {
	const token = "s3cret-token"
	ts := startServer(t, Config{Token: token})
	c := dial(t, ts.addr)
	recs := randomEdges(5, 50, 200, false).records(false, 1)
	schema := recs[0].Schema()

	calls := map[string]func(ctx context.Context) error{
		"GetFlightInfo": func(ctx context.Context) error {
			_, err := c.GetFlightInfo(ctx, pathDescriptor("g", nil))
			return err
		},
		"ListFlights": func(ctx context.Context) error {
			s, err := c.ListFlights(ctx, &flight.Criteria{})
			if err == nil {
				_, err = s.Recv()
			}
			return eofIsNil(err)
		},
		"ListActions": func(ctx context.Context) error {
			s, err := c.ListActions(ctx, &flight.Empty{})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"DoPut": func(ctx context.Context) error {
			_, err := put(ctx, c, pathDescriptor("g", map[string]any{"replace": true}), schema, recs)
			return err
		},
		"DoGet": func(ctx context.Context) error {
			r, err := get(ctx, c, map[string]any{"graph": "g", "op": "cc"})
			r.release()
			return err
		},
		"DoExchange": func(ctx context.Context) error {
			r, err := exchange(ctx, c, cmdDescriptor(map[string]any{"op": "cc"}), schema, recs)
			r.release()
			return err
		},
		"Handshake": func(ctx context.Context) error {
			s, err := c.Handshake(ctx)
			if err == nil {
				s.CloseSend()
				_, err = s.Recv()
			}
			return eofIsNil(err)
		},
	}
	ctx := context.Background()
	if err := calls["DoPut"](withToken(ctx, token)); err != nil {
		t.Fatal(err)
	}
	bad := map[string]context.Context{
		"no token":       ctx,
		"wrong token":    withToken(ctx, "s3cret-tokem"),
		"short token":    withToken(ctx, "s"),
		"empty token":    withToken(ctx, ""),
		"another scheme": appendHeader(ctx, "authorization", "Basic czNjcmV0LXRva2Vu"),
	}
	for name, call := range calls {
		for why, bctx := range bad {
			err := call(bctx)
			wantCode(t, err, codes.Unauthenticated, name+" with "+why)
		}
		if err := call(withToken(ctx, token)); err != nil {
			t.Errorf("%s with the token: %v", name, err)
		}
		if err := call(appendHeader(ctx, "authorization", "bearer "+token)); err != nil {
			t.Errorf("%s with a lower-case scheme: %v", name, err)
		}
	}
}

func eofIsNil(err error) error {
	if err == io.EOF {
		return nil
	}
	return err
}

// TestTLS runs the whole protocol over TLS with a token, on a certificate
// made for the test, and checks that a plain-text client is refused.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	const token = "tls-token"
	ts := startServer(t, Config{Token: token, TLSCertFile: certFile, TLSKeyFile: keyFile})
	if !ts.TLS() {
		t.Fatal("TLS() is false")
	}
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	c := dial(t, ts.addr, grpc.WithTransportCredentials(creds))
	ctx := withToken(context.Background(), token)

	edges := randomEdges(6, 200, 800, true)
	recs := edges.records(true, 2)
	info, err := put(ctx, c, cmdDescriptor(map[string]any{"graph": "secure", "undirected": true}), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	want := reference(t, recs, edgeOptions{Undirected: true}, "sssp", operators.Params{Source: "v3"})
	defer want.Release()
	tree := newEdgeIndex(edges, true, true)
	res, err := get(ctx, c, map[string]any{"graph": "secure", "op": "sssp", "source": "v3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecord(res.rec, want, tree); err != nil {
		t.Error(err)
	}
	res.release()
	res, err = exchange(ctx, c, cmdDescriptor(map[string]any{"op": "sssp", "source": "v3", "undirected": true}), recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRecord(res.rec, want, tree); err != nil {
		t.Error(err)
	}
	res.release()
	stream, err := c.ListFlights(ctx, &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := stream.Recv(); err != nil || fi.TotalRecords != info.Edges {
		t.Fatalf("ListFlights: %v, %v", fi, err)
	}
	if _, err := action(ctx, c, "drop", "secure"); err != nil {
		t.Fatal(err)
	}

	// A client without TLS gets no answer.
	plain := dial(t, ts.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	_, err = plain.GetFlightInfo(ctx, pathDescriptor("secure", nil))
	wantCode(t, err, codes.Unavailable, "a plain-text client of a TLS server")

	// Bad key pairs fail at New, before listening.
	for _, cfg := range []Config{
		{TLSCertFile: certFile},
		{TLSCertFile: certFile, TLSKeyFile: certFile},
		{TLSCertFile: filepath.Join(t.TempDir(), "none.pem"), TLSKeyFile: keyFile},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into a temporary directory, and returns their files and a pool that
// trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gpipe test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
