package headless

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellShape is a shell command as a policy reads it (as Bash parses it).
type shellShape struct {
	// commands are every simple command in it, in order, those inside
	// substitutions, subshells and other constructs too (for deny rules);
	// at least one: a command with none, or one that does not parse, is
	// one part whose text is the whole command.
	commands []shellCommand
	// operators are the ShellOperators that join its top-level commands.
	operators []string
	// refused are the constructs in it that no rule checking the input
	// allows: redirections, substitutions, subshells, blocks, "&", …
	refused []string
	// err is why it does not parse ("" when it does).
	err string
}

// shellCommand is one simple command.
type shellCommand struct {
	// text is what a rule's input regex sees: the command's words after
	// quote removal, joined by single spaces. A word that is not a
	// literal (holding $VAR, $(…), a glob, …) appears as the parser
	// prints it back: deny rules see it, no rule that checks the input
	// allows it.
	text string
	// problem says why no rule that checks the input may allow the
	// command (a word that is not a literal, an assignment before it).
	problem string
	// runner names a command that runs another command from its words
	// (sudo, sh -c, xargs, find -exec, …): only a rule with runners =
	// "allow" allows it.
	runner string
}

// readShell parses a shell tool's command.
func readShell(src string) shellShape {
	var s shellShape
	if strings.ContainsAny(src, "\x00\r") {
		// The parser skips NUL bytes (as Bash reading a script does; a
		// program given the command as an argument stops at the first)
		// and takes a carriage return for a blank, which Bash does not.
		s.err = "it holds a NUL byte or a carriage return"
		s.commands = []shellCommand{{text: src}}
		return s
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.err = err.Error()
		s.commands = []shellCommand{{text: src}}
		return s
	}
	if len(f.Stmts) > 1 {
		s.operator(";")
	}
	for _, st := range f.Stmts {
		s.stmt(st)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			s.commands = append(s.commands, simpleCommand(c))
		}
		return true
	})
	if len(s.commands) == 0 {
		// Nothing but constructs ("(( x ))", "export A=b"): the whole is
		// the one part, which only a rule without input allows.
		s.commands = []shellCommand{{text: strings.TrimSpace(src)}}
		if len(s.refused) == 0 {
			s.refused = append(s.refused, "it holds no command")
		}
	}
	return s
}

func (s *shellShape) operator(op string) {
	if !slices.Contains(s.operators, op) {
		s.operators = append(s.operators, op)
	}
}

func (s *shellShape) refuse(why string) {
	if !slices.Contains(s.refused, why) {
		s.refused = append(s.refused, why)
	}
}

// stmt reads the shape of a top-level statement: simple commands joined
// by operators pass; every other construct is refused.
func (s *shellShape) stmt(st *syntax.Stmt) {
	switch {
	case st.Negated:
		s.refuse("! negates a command")
	case st.Background:
		s.refuse("& runs a command in the background")
	case st.Coprocess || st.Disown:
		s.refuse("|& or &! runs a command in the background")
	}
	for _, r := range st.Redirs {
		s.refuse(redirection(r))
	}
	switch c := st.Cmd.(type) {
	case nil, *syntax.CallExpr:
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			s.operator("&&")
		case syntax.OrStmt:
			s.operator("||")
		case syntax.Pipe:
			s.operator("|")
		default:
			s.refuse(c.Op.String() + " pipes a command's errors too")
		}
		s.stmt(c.X)
		s.stmt(c.Y)
	case *syntax.Subshell:
		s.refuse("( … ) runs commands in a subshell")
	case *syntax.Block:
		s.refuse("{ … } groups commands")
	case *syntax.IfClause:
		s.refuse("if runs commands on a condition")
	case *syntax.WhileClause:
		s.refuse("while or until runs commands in a loop")
	case *syntax.ForClause:
		s.refuse("for runs commands in a loop")
	case *syntax.CaseClause:
		s.refuse("case chooses commands to run")
	case *syntax.FuncDecl:
		s.refuse("it defines a function")
	case *syntax.ArithmCmd, *syntax.LetClause:
		s.refuse("(( … )) or let evaluates arithmetic, which may run commands")
	case *syntax.TestClause:
		s.refuse("[[ … ]] evaluates a test, which may run commands")
	case *syntax.DeclClause:
		s.refuse(c.Variant.Value + " sets variables")
	case *syntax.TimeClause:
		s.refuse("time runs another command")
	case *syntax.CoprocClause:
		s.refuse("coproc runs a command in the background")
	default:
		s.refuse("it holds a construct corral does not read")
	}
}

// redirection says what a redirection does, for a refusal.
func redirection(r *syntax.Redirect) string {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		return "<< feeds a here-document"
	case syntax.WordHdoc:
		return "<<< feeds a here-string"
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
		return r.Op.String() + " redirects input"
	}
	return r.Op.String() + " redirects output"
}

// simpleCommand reads one simple command's words.
func simpleCommand(c *syntax.CallExpr) shellCommand {
	var sc shellCommand
	if len(c.Args) == 0 {
		sc.text = printed(c)
		sc.problem = "`" + clipSource(sc.text) + "` sets a variable"
		return sc
	}
	if len(c.Assigns) > 0 {
		// FOO=bar cmd: the regex sees cmd, which runs with FOO set
		// (PATH, LD_PRELOAD, GIT_SSH_COMMAND, …).
		sc.problem = "`" + clipSource(printed(c.Assigns[0])) + "` before it sets a variable for it"
	}
	words := make([]string, len(c.Args))
	literal := true
	for i, w := range c.Args {
		s, why := literalWord(w)
		if why != "" {
			literal = false
			if sc.problem == "" {
				sc.problem = why
			}
			s = printed(w)
		}
		words[i] = s
	}
	sc.text = strings.Join(words, " ")
	if literal {
		var problem string
		sc.runner, problem = runnerOf(words)
		if sc.problem == "" {
			sc.problem = problem
		}
	}
	return sc
}

// literalWord is a word after quote removal, or why it is not a literal
// (its value is not known until it runs).
func literalWord(w *syntax.Word) (string, string) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, glob := unquoted(p.Value)
			if glob {
				return "", "`" + clipSource(printed(w)) + "` is a file name pattern, which stands for the names it matches"
			}
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", "`" + clipSource(printed(p)) + "` is $'…' quoting"
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", "`" + clipSource(printed(p)) + "` is $\"…\" quoting"
			}
			for _, in := range p.Parts {
				lit, ok := in.(*syntax.Lit)
				if !ok {
					return "", expansion(in)
				}
				b.WriteString(doubleQuoted(lit.Value))
			}
		default:
			return "", expansion(part)
		}
	}
	braces := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if syntax.SplitBraces(braces) && slices.ContainsFunc(braces.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	}) {
		return "", "`" + clipSource(printed(w)) + "` is a brace expansion, which stands for several words"
	}
	return b.String(), ""
}

// expansion says why a word part is not a literal.
func expansion(p syntax.WordPart) string {
	src := "`" + clipSource(printed(p)) + "`"
	switch p := p.(type) {
	case *syntax.ParamExp:
		return src + " expands a variable, whose value is not known here"
	case *syntax.CmdSubst:
		return src + " runs a command"
	case *syntax.ArithmExp:
		return src + " evaluates arithmetic, which may run commands"
	case *syntax.ProcSubst:
		return src + " runs a command"
	case *syntax.ExtGlob:
		return src + " is a file name pattern, which stands for the names it matches"
	default:
		_ = p
		return src + " is not a literal word"
	}
}

// unquoted removes the backslashes of an unquoted literal, and says
// whether an unescaped glob character is in it.
func unquoted(v string) (s string, glob bool) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		case c == '*' || c == '?' || c == '[':
			glob = true
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// doubleQuoted removes the backslashes that escape within double quotes.
func doubleQuoted(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// runners are commands that run another command (or code) named in their
// words, or change what a later command runs. The name is compared in
// lower case: a case-insensitive file system finds SUDO as sudo.
var runners = []string{
	"sh", "bash", "zsh", "dash", "ksh", "mksh", "pdksh", "yash", "fish", "csh", "tcsh", "busybox", "toybox",
	"eval", "exec", "source", ".", "command", "builtin", "trap", "alias", "hash", "enable", "fc",
	"xargs", "env", "sudo", "doas", "su", "runuser", "pkexec", "nohup", "nice", "ionice", "timeout", "stdbuf",
	"setsid", "chroot", "unshare", "nsenter", "flock", "script", "watch", "parallel", "time", "taskset", "chrt",
}

// evaluators are Bash builtins that evaluate a variable name's subscript
// as arithmetic, which runs any $(…) in it: printf -v 'a[$(rm -rf ~)]'.
var evaluators = []string{"printf", "read", "mapfile", "readarray", "unset", "test", "[", "wait", "getopts"}

// runnerOf says whether a literal command runs another, or has a problem
// no rule may allow.
func runnerOf(words []string) (runner, problem string) {
	name := strings.ToLower(words[0])
	if name != "" {
		name = strings.ToLower(path.Base(words[0]))
	}
	args := words[1:]
	switch {
	case name == "env" && len(args) == 0:
	case name == "command" && len(args) > 0 && (args[0] == "-v" || args[0] == "-V"):
	case slices.Contains(runners, name):
		return clipSource(words[0]), ""
	case name == "find" && slices.ContainsFunc(args, func(a string) bool {
		return a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir"
	}):
		return "find -exec", ""
	case slices.Contains(evaluators, name) && slices.ContainsFunc(args, func(a string) bool {
		return strings.ContainsAny(a, "$`")
	}):
		return "", clipSource(words[0]) + " may evaluate a $ or ` in its words as a command"
	}
	return "", ""
}

// printed is a node as shell source.
func printed(n syntax.Node) string {
	var b bytes.Buffer
	if syntax.NewPrinter().Print(&b, n) != nil {
		return "?"
	}
	return strings.TrimSpace(b.String())
}

// clipSource keeps a reason short.
func clipSource(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
