package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/spf13/pflag"
)

func fleetInit(fs *pflag.FlagSet) runFunc {
	listen := fs.String("listen", fleet.DefaultListen, "HOST:PORT for the fleet's NATS server; beyond loopback it serves TLS")
	name := fs.String("name", "", "this host's name in the fleet (default: the machine's name)")
	tls := fs.Bool("tls", false, "serve TLS even on loopback")
	maxJobs := fs.Int("max-jobs", 2, "fleet jobs this host runs at once (0: none)")
	notifyFleet := fs.Bool("notify-fleet", false, "this host's notifications also for other hosts' panes (named HOST:NAME)")
	forgetAfter := fs.Duration("forget-after", 7*24*time.Hour, "a host unreachable this long leaves the fleet's views (0: never)")
	asJSON := fs.Bool("json", false, "print the join details as JSON")
	clusterListen := fs.String("cluster-listen", "", "HOST:PORT for routes to other hubs: this hub is the first of a cluster (corral fleet join-hub adds the others)")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) > 0 {
			return usagef("fleet init takes no arguments, only flags")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		c.Timeout += fleet.HubStartWait + fleet.SetupWait // the daemon answers once its hub and member are set up
		var info fleet.JoinInfo
		if err := c.Do(ctx, "POST", "/v1/fleet/init", fleet.InitRequest{Name: *name, Listen: *listen, TLS: *tls, MaxJobs: *maxJobs, NotifyFleet: *notifyFleet,
			ForgetAfterMS: forgetAfter.Milliseconds(), ClusterListen: *clusterListen}, &info); err != nil {
			return apiError(err)
		}
		if *asJSON {
			return printJSON(std, info)
		}
		fmt.Fprintf(std.Stdout, "fleet started: this host is %s, the hub, at %s\n", info.Name, info.URL)
		if info.Fingerprint != "" {
			fmt.Fprintf(std.Stdout, "TLS: the hub's CA fingerprint is %s\n", info.Fingerprint)
		}
		fmt.Fprintln(std.Stdout, "on another machine, run:")
		fmt.Fprintln(std.Stdout, info.Join)
		printJoinHub(std, info)
		if host, _, err := net.SplitHostPort(*listen); err == nil && isLoopback(host) {
			fmt.Fprintf(std.Stderr, "corral fleet init: the hub listens on %s, a loopback address: that join command works on this machine only; "+
				"run corral fleet init --listen 0.0.0.0:7422 (or this machine's address) for other machines to join\n", *listen)
		}
		return nil
	}
}

// isLoopback says whether host names this machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func fleetJoin(fs *pflag.FlagSet) runFunc {
	token := fs.String("token", "", "the fleet's token, or this host's own (corral fleet invite)")
	creds := fs.String("creds", "", "a NATS credentials file, or an nkey seed file (a team's own NATS)")
	name := fs.String("name", "", "this host's name in the fleet (default: the machine's name)")
	fp := fs.String("ca-fingerprint", "", "the hub's CA fingerprint (the join command carries it when the hub serves TLS)")
	maxJobs := fs.Int("max-jobs", 2, "fleet jobs this host runs at once (0: none)")
	notifyFleet := fs.Bool("notify-fleet", false, "this host's notifications also for other hosts' panes (named HOST:NAME)")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need the fleet's address: corral fleet join nats://HOST:PORT --token TOKEN")
		}
		if (*token == "") == (*creds == "") {
			return usagef("give one of --token or --creds")
		}
		if *creds != "" {
			// The daemon reads the file, from its own folder.
			abs, err := filepath.Abs(*creds)
			if err != nil {
				return fmt.Errorf("--creds %s: %w", *creds, err)
			}
			*creds = abs
		}
		var urls []string
		for _, u := range strings.Split(pos[0], ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		c.Timeout += fleet.SetupWait // the daemon answers once its member is set up
		var out fleet.JoinResult
		if err := c.Do(ctx, "POST", "/v1/fleet/join", fleet.JoinRequest{URLs: urls, Token: *token, Creds: *creds, Name: *name,
			CAFingerprint: *fp, MaxJobs: *maxJobs, NotifyFleet: *notifyFleet}, &out); err != nil {
			return apiError(err)
		}
		fmt.Fprintf(std.Stdout, "joined the fleet as %v\n", out.Name)
		return nil
	}
}

func printJoinHub(std IO, info fleet.JoinInfo) {
	if info.JoinHub == "" {
		return
	}
	fmt.Fprintln(std.Stdout, "to make another machine one more hub of this cluster (the fleet runs once two hubs do; with three, any one may go), run there:")
	fmt.Fprintln(std.Stdout, info.JoinHub)
}

func fleetJoinHub(fs *pflag.FlagSet) runFunc {
	hubToken := fs.String("hub-token", "", "the cluster's hub token (the join-hub command a hub printed carries it)")
	fp := fs.String("ca-fingerprint", "", "the hubs' CA fingerprint")
	name := fs.String("name", "", "this host's name in the fleet (default: the machine's name)")
	listen := fs.String("listen", fleet.DefaultListen, "HOST:PORT for this hub's members; beyond loopback it serves TLS")
	clusterListen := fs.String("cluster-listen", "", "HOST:PORT for routes to the other hubs (an address they reach)")
	maxJobs := fs.Int("max-jobs", 2, "fleet jobs this host runs at once (0: none)")
	notifyFleet := fs.Bool("notify-fleet", false, "this host's notifications also for other hosts' panes (named HOST:NAME)")
	asJSON := fs.Bool("json", false, "print the join details as JSON")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 || *hubToken == "" || *clusterListen == "" {
			return usagef("need a hub's address, --hub-token and --cluster-listen: corral fleet join-hub URL[,URL…] --hub-token T --cluster-listen HOST:PORT")
		}
		var urls []string
		for _, u := range strings.Split(pos[0], ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		c.Timeout += fleet.HubStartWait + fleet.SetupWait // the daemon answers once its hub and member are set up
		var info fleet.JoinInfo
		if err := c.Do(ctx, "POST", "/v1/fleet/join-hub", fleet.JoinHubRequest{URLs: urls, HubToken: *hubToken, CAFingerprint: *fp, Name: *name,
			Listen: *listen, ClusterListen: *clusterListen, MaxJobs: *maxJobs, NotifyFleet: *notifyFleet}, &info); err != nil {
			return apiError(err)
		}
		if *asJSON {
			return printJSON(std, info)
		}
		fmt.Fprintf(std.Stdout, "this host, %s, is one more hub of the fleet; members may be given every hub:\n", info.Name)
		fmt.Fprintln(std.Stdout, info.Join)
		printJoinHub(std, info)
		return nil
	}
}

func fleetStatus(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the hosts as a JSON array")
	return func(ctx context.Context, std IO, _ []string) error {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var st fleet.Status
		if err := c.Do(ctx, "GET", "/v1/fleet/status", nil, &st); err != nil {
			return apiError(err)
		}
		if *asJSON {
			return printJSON(std, st.Hosts)
		}
		role := "member"
		if st.Hub {
			role = "hub, at " + st.URL
		}
		fmt.Fprintf(std.Stdout, "this host: %s (%s)\n", st.Name, role)
		if !st.Joined {
			fmt.Fprintln(std.Stdout, "not connected to the fleet yet; the daemon keeps trying (its log says why)")
		}
		tw := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "HOST\tREACHABLE\tLAST SEEN\tPANES\tJOBS\tANY-HOST JOBS\tACCESS\tVERSION\tPROBLEM")
		for _, h := range st.Hosts {
			seen := "never"
			if t, err := time.Parse(time.RFC3339Nano, h.LastSeen); err == nil {
				seen = time.Since(t).Round(time.Second).String() + " ago"
			}
			reach := fmt.Sprint(h.Reachable)
			if !h.Reachable && h.UnreachableFor > 0 {
				reach = "false, for " + (time.Duration(h.UnreachableFor) * time.Second).String()
			}
			anyJobs := "no"
			if h.AnyHostJobs {
				anyJobs = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\t%s\n", h.Host, reach, seen, h.Panes, h.Jobs, h.MaxJobs, anyJobs, dash(h.Access), h.Version, h.Problem)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		// What others sent that was refused; this host's own refused
		// messages apart (a command an observe-only credential may not send).
		if m := st.Member; m != nil {
			if m.BadIn > 0 || m.Dropped > 0 {
				fmt.Fprintf(std.Stdout, "refused from other hosts: %d; events dropped: %d\n", m.BadIn, m.Dropped)
			}
			if own := m.RefusedOut + m.RefusedAPI; own > 0 {
				fmt.Fprintf(std.Stdout, "this host's own messages the server refused: %d (the daemon's log names them)\n", own)
			}
		}
		if st.Refused > 0 {
			fmt.Fprintf(std.Stdout, "connections refused: %d (last: %s)\n", st.Refused, st.Why)
		}
		return nil
	}
}

func fleetLeave(fs *pflag.FlagSet) runFunc {
	return func(ctx context.Context, std IO, _ []string) error {
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		var out fleet.LeaveResult
		if err := c.Do(ctx, "POST", "/v1/fleet/leave", struct{}{}, &out); err != nil {
			return apiError(err)
		}
		if out.WasHub {
			fmt.Fprintln(std.Stdout, "left the fleet; this host was its hub, so the other hosts lost it (its store stays in the state folder)")
		} else {
			fmt.Fprintln(std.Stdout, "left the fleet")
		}
		return nil
	}
}

func fleetInvite(fs *pflag.FlagSet) runFunc {
	observe := fs.Bool("observe-only", false, "the host may publish its own panes and read the fleet's, but not command other hosts, submit jobs or take them")
	takeJobs := fs.Bool("take-jobs", false, "with --observe-only: the host takes jobs all the same (as its --max-jobs allows)")
	expires := fs.Duration("expires", 0, "the credential stops working after this long (0: never)")
	revoke := fs.Bool("revoke", false, "revoke NAME's credential and disconnect it")
	asJSON := fs.Bool("json", false, "print as JSON")
	return func(ctx context.Context, std IO, pos []string) error {
		if len(pos) != 1 {
			return usagef("need the host's name: corral fleet invite NAME")
		}
		c, err := connect(ctx)
		if err != nil {
			return err
		}
		if *takeJobs && !*observe {
			return usagef("--take-jobs is for an observe-only credential: corral fleet invite NAME --observe-only --take-jobs")
		}
		var info fleet.JoinInfo
		if err := c.Do(ctx, "POST", "/v1/fleet/invite", fleet.InviteRequest{Name: pos[0], ObserveOnly: *observe, TakeJobs: *takeJobs,
			ExpiresMS: expires.Milliseconds(), Revoke: *revoke}, &info); err != nil {
			return apiError(err)
		}
		if *revoke {
			fmt.Fprintf(std.Stdout, "revoked %s's credential\n", pos[0])
			return nil
		}
		if *asJSON {
			return printJSON(std, info)
		}
		fmt.Fprintf(std.Stdout, "a credential for %s; on that machine, run:\n%s\n", pos[0], info.Join)
		return nil
	}
}

// lsFleet lists every host's panes, grouped by host.
func lsFleet(ctx context.Context, std IO, c *client.Client, asJSON bool, hosts, states string) error {
	q := url.Values{}
	if hosts != "" {
		q.Set("host", hosts)
	}
	if states != "" {
		q.Set("state", states)
	}
	var panes []fleet.PaneRecord
	if err := c.Do(ctx, "GET", "/v1/fleet/panes?"+q.Encode(), nil, &panes); err != nil {
		return apiError(err)
	}
	var st fleet.Status
	_ = c.Do(ctx, "GET", "/v1/fleet/status", nil, &st)
	if asJSON {
		if panes == nil {
			panes = []fleet.PaneRecord{}
		}
		return printJSON(std, panes)
	}
	return printFleetPanes(std.Stdout, panes, st.Hosts, hosts, states)
}

// printFleetPanes writes the fleet's panes grouped by host, each group under
// a line saying how the host is (also for a host with no pane). Those lines
// stand outside the table, so a long one (an unreachable host's) leaves its
// columns as narrow as the panes' own.
func printFleetPanes(w io.Writer, panes []fleet.PaneRecord, hosts []fleet.HostStatus, hostGlobs, states string) error {
	var patterns []string
	if hostGlobs != "" {
		patterns = strings.Split(hostGlobs, ",")
	}
	status := map[string]fleet.HostStatus{}
	var names []string
	for _, h := range hosts {
		if len(patterns) == 0 || fleet.MatchHost(patterns, h.Host) {
			status[h.Host] = h
			names = append(names, h.Host)
		}
	}
	byHost := map[string][]fleet.PaneRecord{}
	for _, p := range panes {
		if _, ok := status[p.Host]; !ok && byHost[p.Host] == nil {
			names = append(names, p.Host) // a host the status did not list (yet)
		}
		byHost[p.Host] = append(byHost[p.Host], p)
	}
	sort.Strings(names)
	names = slices.Compact(names)

	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST:ID\tNAME\tAGENT\tSTATE\tFOR\tSOURCE\tMESSAGE")
	// before[i] is the host line printed before the table's line i.
	before := map[int][]string{}
	row := 1
	for _, name := range names {
		before[row] = append(before[row], hostSummary(name, status[name], byHost[name], states))
		for _, p := range byHost[name] {
			state := p.State
			if p.Kind != "" {
				state += "/" + p.Kind
			}
			if p.ExitCode != nil {
				state += fmt.Sprintf(" (%d)", *p.ExitCode)
			}
			fmt.Fprintf(tw, "%s:%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Host, p.ID, dash(p.Name), p.Agent, state, age(p.Since), p.Source, p.Message)
			row++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The last element is "" (after the last newline): host lines with no
	// pane after them go before it.
	lines := strings.SplitAfter(table.String(), "\n")
	var out strings.Builder
	for i, l := range lines {
		for _, h := range before[i] {
			out.WriteString(h + "\n")
		}
		out.WriteString(l)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// fleetEvents prints the fleet's events (refs: HOST or HOST:ID to keep
// only theirs) as NDJSON, each with its host.
func fleetEvents(ctx context.Context, std IO, refs []string, since string, follow bool) error {
	if len(refs) > 1 {
		return usagef("give at most one HOST or HOST:ID")
	}
	q := url.Values{}
	if len(refs) == 1 {
		host, pane, _ := strings.Cut(refs[0], ":")
		q.Set("host", host)
		if pane != "" {
			q.Set("pane", pane)
		}
	}
	if since != "" {
		t, err := parseSince(since)
		if err != nil {
			return err
		}
		q.Set("since", t.UTC().Format(time.RFC3339Nano))
	} else if !follow {
		// As corral events does: the last day's, not nothing.
		q.Set("since", time.Now().Add(-24*time.Hour).UTC().Format(time.RFC3339Nano))
	}
	if follow {
		q.Set("follow", "1")
	}
	return printStream(ctx, std, "/v1/fleet/events?"+q.Encode())
}

// hostSummary is a host's line in ls --fleet: reachable or not (and for how
// long), its panes (those shown, by state), its jobs.
func hostSummary(name string, h fleet.HostStatus, panes []fleet.PaneRecord, states string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s  ", name)
	switch {
	case h.Host == "":
		b.WriteString("not in the fleet's hosts (no heartbeat yet)")
	case h.Reachable:
		b.WriteString("reachable")
	case h.UnreachableFor > 0:
		fmt.Fprintf(&b, "unreachable for %v: its last known states", time.Duration(h.UnreachableFor)*time.Second)
	default:
		b.WriteString("unreachable: its last known states")
	}
	count := map[string]int{}
	var order []string
	for _, p := range panes {
		if count[p.State] == 0 {
			order = append(order, p.State)
		}
		count[p.State]++
	}
	switch {
	case len(panes) == 0 && states != "":
		fmt.Fprintf(&b, ", no %s pane", strings.ReplaceAll(states, ",", " or "))
	case len(panes) == 0:
		b.WriteString(", no panes")
	default:
		// Those that need someone first.
		rank := map[string]int{"blocked": 1, "error": 2, "working": 3, "idle": 4, "done": 5, "exited": 6}
		r := func(st string) int {
			if n, ok := rank[st]; ok {
				return n
			}
			return len(rank) + 1
		}
		sort.SliceStable(order, func(i, j int) bool { return r(order[i]) < r(order[j]) })
		parts := make([]string, len(order))
		for i, st := range order {
			parts[i] = fmt.Sprintf("%d %s", count[st], st)
		}
		fmt.Fprintf(&b, ", %s", plural(len(panes), "pane"))
		if len(order) > 1 || states == "" {
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
	}
	if h.Host != "" {
		if h.MaxJobs > 0 || h.Jobs > 0 {
			fmt.Fprintf(&b, ", jobs %d/%d", h.Jobs, h.MaxJobs)
		}
		if h.Problem != "" {
			fmt.Fprintf(&b, "; %s", h.Problem)
		}
	}
	return b.String()
}

// plural is "1 pane", "2 panes".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
