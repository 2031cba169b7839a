package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/corral-dev/corral/internal/api"
)

// teamNATS is a team's own NATS server: operator mode (JWTs), one account
// with JetStream, no corral hub.
type teamNATS struct {
	srv     *server.Server
	account nkeys.KeyPair
}

func startTeamNATS(t *testing.T) *teamNATS {
	t.Helper()
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opJWT, err := jwt.NewOperatorClaims(opPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	opClaims, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	sys, _ := nkeys.CreateAccount()
	sysPub, _ := sys.PublicKey()
	sysJWT, _ := jwt.NewAccountClaims(sysPub).Encode(op)
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	ac := jwt.NewAccountClaims(accPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
	accJWT, err := ac.Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	_ = resolver.Store(sysPub, sysJWT)
	_ = resolver.Store(accPub, accJWT)
	srv := startTeamServer(t, &server.Options{TrustedOperators: []*jwt.OperatorClaims{opClaims}, AccountResolver: resolver, SystemAccount: sysPub})
	return &teamNATS{srv: srv, account: acc}
}

// startTeamServer starts a NATS server on loopback with JetStream and the
// given authentication, ended when the test is.
func startTeamServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.JetStream, opts.StoreDir = "127.0.0.1", server.RANDOM_PORT, true, t.TempDir()
	opts.NoLog, opts.NoSigs, opts.DisableJetStreamBanner = true, true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the team's NATS did not start")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return srv
}

// creds writes a NATS credentials file for a user of the account, signed
// by signer (the account's key, or another for a forged one); perms nil:
// the user may do anything.
func (n *teamNATS) creds(t *testing.T, signer nkeys.KeyPair, name string, perms *server.Permissions) string {
	t.Helper()
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(userPub)
	uc.Name = name
	if perms != nil {
		uc.Pub.Allow.Add(perms.Publish.Allow...)
		uc.Sub.Allow.Add(perms.Subscribe.Allow...)
		uc.Resp = &jwt.ResponsePermission{MaxMsgs: perms.Response.MaxMsgs, Expires: perms.Response.Expires}
	}
	userJWT, err := uc.Encode(signer)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	b, err := jwt.FormatUserConfig(userJWT, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// refused checks that the server refused m's write to subject: the write
// fails, and the server said why (a refused publish gets no answer: the
// write would otherwise wait out JetStream's 5 s).
func refused(t *testing.T, m *Member, what string, write func(context.Context) error, subject string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := write(ctx); err == nil {
		t.Fatal(what)
	}
	waitFor(t, 5*time.Second, "the server's refusal of "+subject, func() bool {
		err := m.nc.LastError()
		return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject)
	})
}

// TestTeamNATSWithCreds: members join a team's own NATS (no corral hub)
// with credentials files whose users carry the per-host permissions; the
// fleet works, and the server enforces those permissions.
func TestTeamNATSWithCreds(t *testing.T) {
	t.Parallel()
	n := startTeamNATS(t)
	url := n.srv.ClientURL()
	// The team's admin makes the buckets and streams once.
	admin, err := Join(context.Background(), MemberOptions{Name: "ops", URLs: []string{url}, Creds: n.creds(t, n.account, "ops", nil),
		Admin: true, Watch: true, Local: newFakeLocal("o1")})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(false)
	la := newFakeLocal("a1")
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{url}, Creds: n.creds(t, n.account, "a", Permissions("a", true)),
		Watch: true, Local: la, MaxJobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	b, err := Join(context.Background(), MemberOptions{Name: "b", URLs: []string{url}, Creds: n.creds(t, n.account, "b", Permissions("b", true)),
		Watch: true, Local: newFakeLocal("b1")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(false)
	waitFor(t, 10*time.Second, "b sees a:a1 and ops:o1", func() bool {
		return paneState(b, "a", "a1") == "idle" && paneState(b, "ops", "o1") == "idle"
	})
	la.set("a1", "blocked")
	waitFor(t, 5*time.Second, "b sees a:a1 blocked", func() bool { return paneState(b, "a", "a1") == "blocked" })
	if status, body, err := b.Request(context.Background(), "a", "POST", "/v1/panes/a1/send", []byte(`{"text":"x"}`)); err != nil || status != 409 {
		t.Fatalf("send to a blocked pane across hosts: %d %s %v", status, body, err)
	}
	var lines []string
	if err := b.SubmitJob(context.Background(), "", apiExec(), "a", 0, func(l []byte) { lines = append(lines, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], `"state":"done"`) {
		t.Fatalf("a job over the team's NATS: %q", lines)
	}
	// The server holds b to b's permissions.
	refused(t, b, "b wrote a's pane", func(ctx context.Context) error {
		_, err := b.panes.Put(ctx, "a.a1", []byte(`{}`))
		return err
	}, "$KV."+PanesBucket+".a.a1")
	// A credential the account did not sign is refused at join.
	other, _ := nkeys.CreateAccount()
	_, err = Join(context.Background(), MemberOptions{Name: "c", URLs: []string{url}, Creds: n.creds(t, other, "c", nil), Local: newFakeLocal()})
	if err == nil || !strings.Contains(err.Error(), "refused this host's credential") {
		t.Fatalf("a forged credential: %v", err)
	}
	// A credentials file that is not one says so.
	bad := filepath.Join(t.TempDir(), "bad.creds")
	_ = os.WriteFile(bad, []byte("not a creds file"), 0o600)
	if _, err = Join(context.Background(), MemberOptions{Name: "d", URLs: []string{url}, Creds: bad}); err == nil || !strings.Contains(err.Error(), "holds no nkey seed") {
		t.Fatalf("a malformed credentials file: %v", err)
	}
}

// TestNkeyUsersWithSeedFile: a team's NATS whose users are bare nkeys (no
// JWTs): --creds takes the user's seed file, and the user's permissions
// are the server's.
func TestNkeyUsersWithSeedFile(t *testing.T) {
	t.Parallel()
	seedFile := func(name string) (string, string) {
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		path := filepath.Join(t.TempDir(), name+".nk")
		if err := os.WriteFile(path, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		return pub, path
	}
	opsPub, opsSeed := seedFile("ops")
	aPub, aSeed := seedFile("a")
	bPub, bSeed := seedFile("b")
	srv := startTeamServer(t, &server.Options{
		Nkeys: []*server.NkeyUser{{Nkey: opsPub}, {Nkey: aPub, Permissions: Permissions("a", true)}, {Nkey: bPub, Permissions: Permissions("b", false)}}})
	url := srv.ClientURL()
	ops, err := Join(context.Background(), MemberOptions{Name: "ops", URLs: []string{url}, Creds: opsSeed, Admin: true, Local: newFakeLocal("o1")})
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close(false)
	la := newFakeLocal("a1")
	a, err := Join(context.Background(), MemberOptions{Name: "a", URLs: []string{url}, Creds: aSeed, Watch: true, Local: la})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(false)
	b, err := Join(context.Background(), MemberOptions{Name: "b", URLs: []string{url}, Creds: bSeed, Watch: true, Local: newFakeLocal("b1")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(false)
	waitFor(t, 10*time.Second, "a sees b:b1 and b sees a:a1", func() bool {
		return paneState(a, "b", "b1") == "idle" && paneState(b, "a", "a1") == "idle"
	})
	if status, _, err := a.Request(context.Background(), "b", "GET", "/v1/panes/b1", nil); err != nil || status != 200 {
		t.Fatalf("a (control) reads b's pane: %d %v", status, err)
	}
	// b's user is observe-only there: it may not command a.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := b.Request(ctx, "a", "GET", "/v1/panes/a1", nil); err == nil {
		t.Fatal("an observe-only nkey user commanded another host")
	}
	// The server holds a to a's own subjects.
	refused(t, a, "a wrote b's heartbeat", func(ctx context.Context) error {
		_, err := a.hosts.Put(ctx, "b", []byte(`{}`))
		return err
	}, "$KV."+HostsBucket+".b")
}

func apiExec() api.ExecRequest { return api.ExecRequest{Agent: "claude", Command: []string{"true"}} }
