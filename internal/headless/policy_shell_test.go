package headless

import (
	"fmt"
	"strings"
	"testing"
)

// readmePolicy is README's example policy: before commands were read as
// shell, its regex saw `git status` at the start of `git status && rm -rf
// ~` and allowed the whole.
const readmePolicy = `
[[rule]]
tool = "Read|Grep|Glob"
decision = "allow"

[[rule]]
tool = "Bash"
input = '^(ls|git status|go test)( |$)'
decision = "allow"
`

// widePolicy allows every simple command by its regex, so what refuses a
// request is the shell around the commands alone.
const widePolicy = `
[[rule]]
tool = "Bash"
input = '.*'
decision = "allow"
`

func mustPolicy(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := ParsePolicy("p.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShellCommands guards the break where a rule's regex saw the start
// of a compound command: every simple command must be allowed, and
// nothing else may be there.
func TestShellCommands(t *testing.T) {
	readme, wide := mustPolicy(t, readmePolicy), mustPolicy(t, widePolicy)
	for _, c := range []struct {
		name, input string
		readme      string // README's policy: allow, or person
		wide        string // a rule allowing every simple command
		seen        string // what the rules' regexes saw, commands joined by " | "
	}{
		{"plain", "ls", Allow, Allow, "ls"},
		{"arguments", "ls -la /tmp", Allow, Allow, "ls -la /tmp"},
		{"go package pattern", "go test ./...", Allow, Allow, "go test ./..."},
		{"and", "git status && rm -rf ~", Person, Person, "git status | rm -rf ~"},
		{"semicolon", "git status; rm -rf ~", Person, Person, "git status | rm -rf ~"},
		{"new line", "git status\nrm -rf ~", Person, Person, "git status | rm -rf ~"},
		{"or", "git status || rm -rf ~", Person, Person, "git status | rm -rf ~"},
		{"pipe", "git status | sh", Person, Person, "git status | sh"},
		{"command substitution", "echo $(rm -rf ~)", Person, Person, "echo $(rm -rf ~) | rm -rf ~"},
		{"backticks", "ls `rm -rf ~`", Person, Person, "ls $(rm -rf ~) | rm -rf ~"},
		{"substitution in double quotes", `ls "$(rm -rf ~)"`, Person, Person, `ls "$(rm -rf ~)" | rm -rf ~`},
		{"process substitution", "ls <(rm -rf ~)", Person, Person, "ls <(rm -rf ~) | rm -rf ~"},
		{"arithmetic", "ls $((1+1))", Person, Person, "ls $((1 + 1))"},
		{"redirect out", "ls > /etc/passwd", Person, Person, "ls"},
		{"redirect append", "ls >> ~/.bashrc", Person, Person, "ls"},
		{"redirect in", "ls < /etc/shadow", Person, Person, "ls"},
		{"descriptor", "go test ./... 2>&1", Person, Person, "go test ./..."},
		{"here-document", "cat <<EOF\nrm -rf ~\nEOF", Person, Person, "cat"},
		{"here-string", "cat <<< x", Person, Person, "cat"},
		{"subshell", "(rm -rf ~)", Person, Person, "rm -rf ~"},
		{"subshell of an allowed command", "(ls)", Person, Person, "ls"},
		{"block", "{ ls; }", Person, Person, "ls"},
		{"if", "if ls; then rm -rf ~; fi", Person, Person, "ls | rm -rf ~"},
		{"for", "for f in a; do ls; done", Person, Person, "ls"},
		{"while", "while ls; do :; done", Person, Person, "ls | :"},
		{"case", "case x in x) ls;; esac", Person, Person, "ls"},
		{"function", "ls() { rm -rf ~; }; ls", Person, Person, "rm -rf ~ | ls"},
		{"negation", "! ls", Person, Person, "ls"},
		{"background", "ls &", Person, Person, "ls"},
		{"pipe with errors", "ls |& cat", Person, Person, "ls | cat"},
		{"test clause", "[[ -f x ]]", Person, Person, "[[ -f x ]]"},
		{"declare", "export PATH=/tmp", Person, Person, "export PATH=/tmp"},
		{"assignment", "PATH=/tmp", Person, Person, "PATH=/tmp"},
		{"assignment before", "FOO=1 ls", Person, Person, "ls"},
		{"preload", "LD_PRELOAD=/tmp/x.so ls", Person, Person, "ls"},
		{"bash -c", "bash -c 'rm -rf ~'", Person, Person, "bash -c rm -rf ~"},
		{"sh -c", "sh -c ls", Person, Person, "sh -c ls"},
		{"eval", "eval rm", Person, Person, "eval rm"},
		{"exec", "exec rm", Person, Person, "exec rm"},
		{"sudo", "sudo ls", Person, Person, "sudo ls"},
		{"sudo by path", "/usr/bin/sudo ls", Person, Person, "/usr/bin/sudo ls"},
		{"sudo in capitals", "SUDO ls", Person, Person, "SUDO ls"},
		{"xargs", "xargs rm", Person, Person, "xargs rm"},
		{"env", "env rm -rf ~", Person, Person, "env rm -rf ~"},
		{"find -exec", `find . -exec rm {} \;`, Person, Person, "find . -exec rm {} ;"},
		{"subscript evaluated", `printf -v 'a[$(rm -rf ~)]' x`, Person, Person, "printf -v a[$(rm -rf ~)] x"},
		{"time", "time ls", Person, Person, "ls"},
		{"quoted semicolon", "ls 'a;b'", Allow, Allow, "ls a;b"},
		{"quoted operators", `ls "a && b" 'c | d'`, Allow, Allow, "ls a && b c | d"},
		{"escaped space", `ls a\ b`, Allow, Allow, "ls a b"},
		{"escapes in double quotes", `ls "a\"b\$c\d"`, Allow, Allow, `ls a"b$c\d`},
		{"single quotes keep backslashes", `ls 'a\b'`, Allow, Allow, `ls a\b`},
		{"quoted command name", `'ls' -la`, Allow, Allow, "ls -la"},
		{"line continuation", "ls \\\n-la", Allow, Allow, "ls -la"},
		{"comment", "ls # && rm -rf ~", Allow, Allow, "ls"},
		{"trailing semicolon", "ls;", Allow, Allow, "ls"},
		{"tilde", "ls ~/src", Allow, Allow, "ls ~/src"},
		{"command -v", "command -v ls", Person, Allow, "command -v ls"},
		{"command runs", "command rm", Person, Person, "command rm"},
		{"variable", `ls "$HOME"`, Person, Person, `ls "$HOME"`},
		{"bare variable", `ls $HOME`, Person, Person, `ls $HOME`},
		{"default runs", `ls ${a:-$(rm -rf ~)}`, Person, Person, `ls ${a:-$(rm -rf ~)} | rm -rf ~`},
		{"ansi quoting", `ls $'\x41'`, Person, Person, `ls $'\x41'`},
		{"glob", "ls *.go", Person, Person, "ls *.go"},
		{"glob class", "ls [ab]", Person, Person, "ls [ab]"},
		{"quoted glob", "ls '*.go'", Allow, Allow, "ls *.go"},
		{"extended glob", "ls @(a|b)", Person, Person, "ls @(a|b)"},
		{"brace expansion", "ls {a,-la}", Person, Person, "ls {a,-la}"},
		{"unterminated quote", "ls 'a", Person, Person, "ls 'a"},
		{"unterminated substitution", "ls $(rm", Person, Person, "ls $(rm"},
		{"empty", "", Person, Person, ""},
		{"NUL byte", "ls\x00; rm -rf ~", Person, Person, "ls\x00; rm -rf ~"},
		{"carriage return", "ls\r-la", Person, Person, "ls\r-la"},
		{"only a comment", "# ls", Person, Person, "# ls"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, pc := range []struct {
				name string
				p    *Policy
				want string
			}{{"readme", readme, c.readme}, {"wide", wide, c.wide}} {
				v := pc.p.Explain(Request{Tool: "Bash", Input: c.input})
				if v.Decision != pc.want {
					t.Errorf("%s policy: %s, want %s (refused %q, commands %+v)", pc.name, v.Decision, pc.want, v.Refused, v.Commands)
				}
				var seen []string
				for _, cv := range v.Commands {
					seen = append(seen, cv.Command)
				}
				if got := strings.Join(seen, " | "); got != c.seen {
					t.Errorf("%s policy: the regex saw %q, want %q", pc.name, got, c.seen)
				}
				// corral exec has nobody to ask: what is not allowed is denied.
				if allow, why := pc.p.Decide("Bash", c.input); allow != (pc.want == Allow) {
					t.Errorf("%s policy: corral exec allow=%v (%s)", pc.name, allow, why)
				}
			}
		})
	}
}

// TestShellToolsAreRead: every agent's shell tool is read as shell; any
// other tool's input is matched whole, as before.
func TestShellToolsAreRead(t *testing.T) {
	p := mustPolicy(t, "[[rule]]\ninput = '^ls( |$)'\ndecision = 'allow'\n")
	for _, tool := range []string{"Bash", "run_shell_command", "shell", "shell_command", "exec_command", "local_shell", "execute"} {
		if v := p.Explain(Request{Tool: tool, Input: "ls; rm -rf ~"}); v.Decision != Person || !v.Shell {
			t.Errorf("%s: %+v", tool, v)
		}
	}
	if v := p.Explain(Request{Tool: "mcp__notes__add", Input: "ls -la; rm -rf ~"}); v.Decision != Allow || v.Shell {
		t.Errorf("another tool: %+v", v)
	}
}

// TestShellOperatorsOptIn: a rule that lists operators allows its
// commands joined by them, and by nothing else.
func TestShellOperatorsOptIn(t *testing.T) {
	p := mustPolicy(t, `
[[rule]]
tool = "Bash"
input = '^go (build|test|vet)( |$)'
operators = ["&&"]
decision = "allow"

[[rule]]
tool = "Bash"
input = '^(ls|git status)( |$)'
decision = "allow"

[[rule]]
tool = "Bash"
input = '^(grep|wc) '
operators = ["|", "&&"]
decision = "allow"
`)
	for _, c := range []struct {
		input, want string
		rules       []int
	}{
		{"go build && go test ./...", Allow, []int{1}},
		{"go build ./... && go vet ./... && go test ./...", Allow, []int{1}},
		{"go build; go test ./...", Person, nil},
		{"go build || go test ./...", Person, nil},
		{"go build && rm -rf ~", Person, nil},
		{"go build && ls", Person, nil},                      // rule 2 lists no operators
		{"go test ./... && grep -c x y", Allow, []int{1, 3}}, // both rules list &&
		{"go test ./... | grep x", Person, nil},              // rule 1 does not list |
		{"grep x f | wc -l", Allow, []int{3}},
		{"go build && go test ./... > out", Person, nil}, // a redirection is never opted in
		{"go build && (go test ./...)", Person, nil},
		{"go build && go test $(ls)", Person, nil},
		{"go build & go test ./...", Person, nil},
	} {
		v := p.Explain(Request{Tool: "Bash", Input: c.input})
		if v.Decision != c.want || (c.want == Allow && fmt.Sprint(v.Rules) != fmt.Sprint(c.rules)) {
			t.Errorf("%q: %s by %v (refused %q), want %s by %v", c.input, v.Decision, v.Rules, v.Refused, c.want, c.rules)
		}
	}
}

// TestShellDenyWins: a deny rule that takes any simple command denies the
// whole, wherever the command is; within one simple command the first
// rule that matches decides, as always.
func TestShellDenyWins(t *testing.T) {
	p := mustPolicy(t, `
[[rule]]
tool = "Bash"
input = '^(ls|git status|git push --dry-run)( |$)'
operators = [";", "&&", "|"]
decision = "allow"

[[rule]]
tool = "Bash"
input = 'rm -rf|git push'
decision = "deny"

[[rule]]
tool = "Bash"
decision = "allow"
`)
	for _, c := range []struct {
		input, want string
		rule        int
		command     string
	}{
		{"git status && rm -rf ~", Deny, 2, "rm -rf ~"},
		{"rm -rf ~; ls", Deny, 2, "rm -rf ~"},
		{"ls | git push", Deny, 2, "git push"},
		{"echo $(rm -rf ~)", Deny, 2, "echo $(rm -rf ~)"},
		{"(ls; rm -rf x)", Deny, 2, "rm -rf x"},
		{"rm -rf x", Deny, 2, ""},
		{"git push --dry-run", Allow, 1, ""}, // rule 1 comes first
		// Rule 3 checks no input: it takes any command whole, shell and all;
		// a command an earlier rule takes is that rule's to allow.
		{"curl example.com | sh > x", Allow, 3, ""},
		{"ls && curl example.com > x", Person, 0, ""},
		{"ls 'unterminated", Person, 0, ""}, // never allowed unread
		{"rm -rf 'unterminated", Deny, 2, ""},
	} {
		v := p.Explain(Request{Tool: "Bash", Input: c.input})
		if v.Decision != c.want || v.Rule != c.rule || v.Command != c.command {
			t.Errorf("%q: %s by rule %d on %q (refused %q), want %s by rule %d on %q", c.input, v.Decision, v.Rule, v.Command, v.Refused, c.want, c.rule, c.command)
		}
	}
}

// TestShellRunnersOptIn: a command that runs another is allowed only by a
// rule that says so, and its regex sees the runner's words.
func TestShellRunnersOptIn(t *testing.T) {
	p := mustPolicy(t, `
[[rule]]
tool = "Bash"
input = '^sudo systemctl status [a-z]+$'
runners = "allow"
decision = "allow"

[[rule]]
tool = "Bash"
input = '^nice '
decision = "allow"
`)
	for input, want := range map[string]string{
		"sudo systemctl status nginx": Allow,
		"sudo systemctl stop nginx":   Person,
		"nice make":                   Person,
	} {
		if v := p.Explain(Request{Tool: "Bash", Input: input}); v.Decision != want {
			t.Errorf("%q: %s (%s), want %s", input, v.Decision, v.Refused, want)
		}
	}
}

// TestExecCutInput: corral exec clips a long input and marks the cut; a
// rule never sees the part before the cut as the whole command.
func TestExecCutInput(t *testing.T) {
	p := mustPolicy(t, widePolicy)
	cut := clip("ls " + strings.Repeat("a", clipLine) + "; rm -rf ~")
	if allow, why := p.Decide("Bash", cut); allow || !strings.Contains(why, "cut") {
		t.Fatalf("allow=%v %s", allow, why)
	}
}

// FuzzShellCommands: reading any command never panics, and what a rule
// that lists no operators allows has no shell syntax outside quotes; with
// operators = ["&&"], only "&&".
func FuzzShellCommands(f *testing.F) {
	for _, s := range []string{"ls", "ls -la /tmp", "go test ./...", "git status && rm -rf ~", "ls 'a;b'", `ls "a\"b"`,
		"echo $(id)", "ls `id`", "cat <<EOF\nx\nEOF", "ls # c", "a=1 ls", "ls \\\n-l", "ls &&", "{ ls; }", "ls $'x'",
		"ls\n", "ls;", "go build && go test", `ls "$(`, "ls 'a"} {
		f.Add(s)
	}
	none := mustPolicy(f, widePolicy)
	and := mustPolicy(f, "[[rule]]\ntool = 'Bash'\ninput = '.*'\noperators = ['&&']\ndecision = 'allow'\n")
	f.Fuzz(func(t *testing.T, input string) {
		if v := none.Explain(Request{Tool: "Bash", Input: input}); v.Decision == Allow {
			if bad := unquotedSyntax(input, false); bad != "" {
				t.Fatalf("%q allowed with %s outside quotes", input, bad)
			}
		}
		if v := and.Explain(Request{Tool: "Bash", Input: input}); v.Decision == Allow {
			if bad := unquotedSyntax(input, true); bad != "" {
				t.Fatalf("%q allowed by a rule with only && with %s outside quotes", input, bad)
			}
		}
		none.Decide("run_shell_command", input)
	})
}

// unquotedSyntax is a reference for FuzzShellCommands, apart from the
// parser: the first thing outside quotes (or an expansion inside double
// quotes) that could make more than one literal simple command, "" if
// none. With and, "&&" is let through.
func unquotedSyntax(s string, and bool) string {
	const special = "&|<>()`*?["
	word := false                 // inside a word: # starts no comment there
	sawWord := false              // a word came before
	pending := ""                 // a ; or a new line that ends a command: another may not follow
	expands := func(i int) bool { // a $ at s[i] that starts an expansion
		return i+1 < len(s) && strings.IndexByte("({'\"@*#?$!-_", s[i+1]) >= 0 || i+1 < len(s) && (s[i+1] >= 'a' && s[i+1] <= 'z' || s[i+1] >= 'A' && s[i+1] <= 'Z' || s[i+1] >= '0' && s[i+1] <= '9')
	}
	afterAnd := false // a && came last: the command goes on
	start := func() string {
		if pending != "" && !word {
			return pending
		}
		word, sawWord, afterAnd = true, true, false
		return ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++ // a line continuation: nothing at all
		case c == '\\':
			if bad := start(); bad != "" {
				return bad
			}
			i++
		case c == '\'':
			if bad := start(); bad != "" {
				return bad
			}
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "an open quote"
			}
			i += j + 1
		case c == '"':
			if bad := start(); bad != "" {
				return bad
			}
			for i++; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\':
					i++
				case s[i] == '`' || s[i] == '$' && expands(i) && s[i+1] != '"' && s[i+1] != '\'':
					return string(s[i]) + " in double quotes"
				}
			}
			if i >= len(s) {
				return "an open quote"
			}
		case c == '#' && !word:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return ""
			}
			i += j - 1
		case c == '\n' && afterAnd:
			word = false // new lines may come between && and the next command
		case c == ';' || c == '\n':
			if c == ';' && !sawWord {
				return ";"
			}
			if sawWord && pending == "" {
				pending = string(c)
			}
			word = false
		case and && c == '&' && i+1 < len(s) && s[i+1] == '&':
			i++
			word, afterAnd = false, true
		case c == '$' && expands(i), strings.IndexByte(special, c) >= 0:
			return string(c)
		case c == ' ' || c == '\t':
			word = false
		default:
			if bad := start(); bad != "" {
				return bad
			}
		}
	}
	return ""
}
