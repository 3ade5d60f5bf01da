package autoroute

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"
)

// Task families a conversation is classified into; each but general is a
// score family of the catalog (general ranks by the overall score).
const (
	Coding       = "coding"
	Math         = "math"
	Reasoning    = "reasoning"
	Writing      = "writing"
	Vision       = "vision"
	Multilingual = "multilingual"
	ToolUse      = "tool_use"
	General      = "general"
)

// Families lists them, General last.
var Families = []string{Coding, Math, Reasoning, Writing, Vision, Multilingual, ToolUse, General}

// Features are what the classifier saw in the conversation; they are
// shown in the router's stage.
type Features struct {
	Images     bool `json:"images"`
	Tools      bool `json:"tools"`
	CodeBlock  bool `json:"code_block"`
	NonLatin   bool `json:"non_latin"`
	Chars      int  `json:"chars"`
	Messages   int  `json:"messages"`
	LongPrompt bool `json:"long_prompt"`
	// Signals are the keyword scores per family.
	Signals map[string]int `json:"signals"`
}

// signal is one kind of evidence for a family and the weight it adds:
// words (matched as whole lowercase tokens), phrases (several words,
// matched in the lowercased text with spaces normalised) or a regular
// expression for what words cannot say (code structure, operators).
// Words and phrases are map and substring lookups, not one large
// case-insensitive regular expression, which cost close to a millisecond
// a message natively and ten times that in the Wasm guest.
type signal struct {
	words   map[string]bool
	phrases []string
	re      *regexp.Regexp
	// and: every word of words and one of and must be there (a verb and
	// its object: "write … poem").
	and    map[string]bool
	weight int
}

// both is a signal of one word of verbs together with one of objects.
func both(weight int, verbs, objects []string) signal {
	s := signal{words: map[string]bool{}, and: map[string]bool{}, weight: weight}
	for _, v := range verbs {
		s.words[v] = true
	}
	for _, o := range objects {
		s.and[o] = true
	}
	return s
}

// terms makes a signal of words and phrases: an entry with a space is a
// phrase.
func terms(weight int, ts ...string) signal {
	s := signal{words: map[string]bool{}, weight: weight}
	for _, t := range ts {
		if strings.Contains(t, " ") {
			s.phrases = append(s.phrases, " "+t+" ")
		} else {
			s.words[t] = true
		}
	}
	return s
}

func pattern(weight int, re string) signal {
	return signal{re: regexp.MustCompile(re), weight: weight}
}

// text is a message prepared for matching: its lowercase tokens and its
// lowercased words joined by single spaces, padded, for phrases.
type text struct {
	raw    string
	tokens map[string]bool
	joined string
}

func prepare(raw string) text {
	t := text{raw: raw, tokens: map[string]bool{}}
	var b strings.Builder
	b.WriteByte(' ')
	for _, w := range strings.FieldsFunc(strings.ToLower(raw), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '+' || r == '#' || r == '-' || r == '\'' || r == ';')
	}) {
		w = strings.Trim(w, "-'")
		if w == "" {
			continue
		}
		t.tokens[w] = true
		b.WriteString(w)
		b.WriteByte(' ')
	}
	t.joined = b.String()
	return t
}

func (s *signal) match(t text) bool {
	if s.re != nil {
		return s.re.MatchString(t.raw)
	}
	if s.and != nil {
		verb, object := false, false
		for w := range t.tokens {
			verb = verb || s.words[w]
			object = object || s.and[w]
		}
		return verb && object
	}
	for w := range t.tokens {
		if s.words[w] {
			return true
		}
	}
	for _, p := range s.phrases {
		if strings.Contains(t.joined, p) {
			return true
		}
	}
	return false
}

// signals per family. Weights: 3 for a near-certain marker (a stack trace,
// an integral), 2 for a strong word, 1 for a hint. Each signal counts
// once per conversation, however often it matches.
var signals = map[string][]signal{
	Coding: {
		pattern(3, "```"),
		pattern(3, `(?m)^\s*(def|func|function|class|import|package|#include|public static|const|let|var)\s+\w`),
		terms(3, "traceback", "stacktrace", "stack trace", "segfault", "segmentation fault", "nullpointerexception", "syntaxerror", "typeerror", "keyerror", "valueerror", "indexerror", "panic:", "compile error", "compiler error", "compilation error", "undefined is not a function"),
		terms(2, "python", "javascript", "typescript", "golang", "go program", "rust", "java", "c++", "c#", "kotlin", "swift", "ruby", "php", "bash", "shell script", "powershell", "sql", "regex", "regular expression", "html", "css", "react", "vue", "django", "flask", "node", "nodejs", "node.js", "npm", "pip", "docker", "dockerfile", "kubernetes", "k8s", "terraform", "git", "github", "api endpoint", "json schema", "yaml", "graphql", "linux command", "cron"),
		// Front-end work (until 2026-11-29 half of such questions went
		// to general: issue 34).
		terms(2, "div", "divs", "flexbox", "flex", "css grid", "navbar", "hamburger menu", "responsive", "media query", "media queries", "viewport", "tailwind", "bootstrap", "sass", "scss", "webpack", "vite", "bundle", "bundler", "next.js", "nextjs", "svelte", "angular", "jquery", "dom", "usestate", "useeffect", "uselayouteffect", "usememo", "usecallback", "hook", "hooks", "props", "jsx", "tsx", "re-render", "re-renders", "rerender", "rerenders", "render", "renders", "onclick", "onchange", "event handler", "click handler", "handler", "selector", "z-index", "sticky", "frontend", "front-end", "backend", "browser", "lazy-load", "above the fold", "below the fold", "stylesheet", "layout shift", "float", "floats"),
		terms(2, "function", "functions", "method", "methods", "variable", "variables", "compile", "compiler", "debug", "debugging", "refactor", "unit test", "unit tests", "test case", "test cases", "bug", "bugs", "exception", "stack", "recursion", "recursive", "pointer", "pointers", "array", "arrays", "linked list", "hashmap", "hash map", "dictionary", "struct", "interface", "endpoint", "query", "database", "script", "codebase", "repository", "pull request", "dependency", "library", "framework", "runtime", "thread", "threads", "async", "mutex", "deadlock", "memory leak", "big-o", "time complexity", "algorithm", "implement", "code", "program", "snippet", "lint", "type hints", "cli", "class", "component", "workflow", "pod", "query"),
		pattern(2, `[a-zA-Z_]\w*\([^)]*\)\s*[{:;]`),
		pattern(1, `\b\w+\.(py|js|ts|go|rs|java|cpp|c|rb|sh|sql|yaml|yml|json)\b`),
	},
	Math: {
		terms(3, "integral", "integrate", "derivative", "differentiate", "eigenvalue", "eigenvalues", "eigenvector", "eigenvectors", "determinant", "matrix", "matrices", "theorem", "lemma", "corollary", "prove that", "proof", "polynomial", "quadratic", "logarithm", "factorial", "binomial", "combinatorics", "permutation", "permutations", "combination", "combinations", "probability", "expected value", "variance", "standard deviation", "modulo", "prime", "primes", "prime number", "prime numbers", "gcd", "lcm", "limit of", "converge", "converges", "arithmetic sequence", "geometric series", "geometric sequence", "trigonometry", "trigonometric", "hypotenuse", "radius", "circumference", "perimeter", "area of", "volume of", "diagonals", "irrational"),
		pattern(3, `[0-9a-z)]\s*\^\s*[0-9a-z(]|√|∫|∑|π|≤|≥|≠|\\frac|\\sqrt|\\int`),
		pattern(2, `\d+\s*[-+*/×÷=]\s*\d+|\d\s*%`),
		terms(2, "solve", "equation", "calculate", "compute", "evaluate", "simplify", "how many", "how much", "percent", "percentage", "average", "mean", "median", "ratio", "fraction", "decimal", "sum of", "product of", "find x", "find the value", "digit", "digits", "divisible", "integer", "integers", "real number", "real numbers", "triangle", "angle", "slope", "graph of", "f(x)"),
		// "log" alone is as often a verb ("log it") as a logarithm.
		terms(1, "log", "math", "maths", "mathematics", "algebra", "geometry", "calculus", "statistics", "number", "numbers", "odd", "even", "multiply", "divide", "subtract", "interest rate", "compound interest"),
	},
	Reasoning: {
		terms(3, "riddle", "puzzle", "logic puzzle", "brain teaser", "brainteaser", "syllogism", "paradox", "knights and knaves", "deduce", "deduction", "infer", "inference",
			// Liars and truth-tellers, and who-did-it questions.
			"knight", "knave", "knaves", "tells the truth", "telling the truth", "tell the truth", "always lies", "is lying", "are lying", "who did it", "who could have", "who must",
			// Telling causes apart (issue 34: "how would you figure out which caused…").
			"which caused", "which one caused", "what caused", "made the difference", "tell them apart", "tell apart", "rule out", "most likely explanation", "figure out which", "work out which"),
		// A constraint puzzle: crossings, turns, at most so many at a time.
		terms(2, "cross", "crossing", "crossings", "at a time", "at most", "never outnumber", "fastest plan", "sequence of moves", "in which order", "what can we say", "can we conclude", "must be", "could be"),
		terms(2, "walk me through", "lay out", "considerations", "arguments for and against", "for and against", "weigh", "weigh up", "risks", "which risk", "would you accept", "would you choose", "own view", "dilemma", "prisoner's dilemma"),
		terms(2, "if all", "none of", "therefore", "it follows", "must be true", "cannot both", "contradiction", "assumption", "assumptions", "premise", "premises", "conclusion", "conclude", "argument", "fallacy", "counterfactual", "what would happen if", "what would happen", "why does", "why do", "why is", "why are", "why would", "why might", "explain why", "reason about", "step by step", "think through", "trade-off", "trade-offs", "tradeoffs", "pros and cons", "compare", "comparison", "versus", "vs", "which is better", "decide", "decision", "strategy", "plan for", "prioritise", "prioritize", "evaluate the", "analyse", "analyze", "analysis", "implication", "implications", "consequence", "consequences", "root cause", "hypothesis", "hypotheses"),
		pattern(2, `\b([Aa]ll|[Ss]ome) \w+ are\b`),
		terms(1, "logic", "logical", "reasoning", "rationale", "cause", "effect", "likely", "unlikely", "ethical", "scenario"),
	},
	Writing: {
		both(3, []string{"write", "draft", "compose", "pen", "craft", "create"}, []string{"poem", "haiku", "sonnet", "limerick", "story", "essay", "email", "e-mail", "letter", "blog", "article", "speech", "toast", "eulogy", "slogan", "slogans", "tagline", "copy", "description", "release", "bio", "biography", "lyrics", "song", "script", "screenplay", "dialogue", "newsletter", "tweet", "post", "caption", "review", "outline", "summary", "abstract", "proposal", "memo", "invitation", "note", "apology", "paragraph", "opening"}),
		terms(3, "rewrite", "rephrase", "paraphrase", "proofread", "copyedit", "edit this", "edit my", "polish", "make it sound", "make this sound", "make it more", "make this more", "improve the wording", "improve the flow", "improve the tone", "fix the grammar", "grammar", "tone", "more formal", "more casual", "shorten this", "summarize", "summarise", "tl;dr", "tldr"),
		terms(2, "poem", "story", "essay", "novel", "character", "plot", "narrative", "metaphor", "rhyme", "stanza", "prose", "fiction", "creative", "headline", "title ideas", "wording", "paragraph", "slogan", "slogans"),
	},
	Multilingual: {
		terms(3, "translate", "translation", "traduire", "traducir", "übersetze", "翻译", "翻訳"),
		terms(2, "in french", "in spanish", "in german", "in italian", "in portuguese", "in dutch", "in russian", "in chinese", "in japanese", "in korean", "in arabic", "in hindi", "in turkish", "in polish", "in swedish", "in vietnamese", "in indonesian"),
		terms(2, "el", "los", "las", "una", "por", "para", "porque", "cómo", "qué", "está", "le", "les", "une", "des", "est", "pourquoi", "comment", "avec", "der", "die", "das", "und", "nicht", "ist", "wie", "warum", "mit", "il", "della", "perché", "sono", "não", "você", "como", "uma", "het", "een", "niet", "och", "jag", "är",
			"alla", "degli", "delle", "nella", "questo", "quello", "anche", "molto", "qual", "são", "também", "muito", "diferença", "entre"),
		// Letters English never uses: Turkish, Polish, Czech, Vietnamese,
		// Portuguese, Romanian diacritics.
		pattern(2, `[şğıąęłżźśćńřěůđơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹãõțș]`),
	},
}

// minSignal is the keyword score a family needs to be chosen over general.
const minSignal = 2

var latinOK = func(r rune) bool {
	return r < 0x250 || unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsDigit(r) || unicode.IsSymbol(r)
}

// Text returns the conversation's user text (the last user message weighs
// most, so it is returned separately), and the features that do not need
// keywords.
func Text(body []byte) (last, all string, f Features) {
	msgs := gjson.GetBytes(body, "messages")
	var b strings.Builder
	msgs.ForEach(func(_, m gjson.Result) bool {
		f.Messages++
		role := m.Get("role").Str
		c := m.Get("content")
		var text string
		if c.IsArray() {
			var parts []string
			c.ForEach(func(_, p gjson.Result) bool {
				switch p.Get("type").Str {
				case "text":
					parts = append(parts, p.Get("text").Str)
				case "image_url", "input_image", "image":
					f.Images = true
				}
				return true
			})
			text = strings.Join(parts, "\n")
		} else {
			text = c.Str
		}
		f.Chars += len(text)
		if role == "user" {
			last = text
			b.WriteString(text)
			b.WriteByte('\n')
		}
		return true
	})
	f.Tools = gjson.GetBytes(body, "tools.#").Int() > 0
	f.CodeBlock = strings.Contains(last, "```")
	nonLatin, letters := 0, 0
	for _, r := range last {
		if unicode.IsLetter(r) {
			letters++
			if !latinOK(r) {
				nonLatin++
			}
		}
	}
	f.NonLatin = letters > 0 && nonLatin*3 > letters
	f.LongPrompt = f.Chars > 20000
	return last, b.String(), f
}

// Classify puts the conversation into a task family: images make it
// vision, tools offered make it tool use (the model must call them well),
// a mostly non-Latin script or a translation request multilingual;
// otherwise the family whose keywords score highest in the last user
// message (earlier user turns count half), or general when none reaches
// minSignal.
func Classify(body []byte) (string, Features) {
	last, all, f := Text(body)
	f.Signals = map[string]int{}
	lastT := prepare(last)
	var earlierT text
	earlier := strings.TrimSuffix(all, last+"\n")
	if earlier != "" {
		earlierT = prepare(earlier)
	}
	for fam, sigs := range signals {
		n := 0
		for i := range sigs {
			s := &sigs[i]
			if s.match(lastT) {
				n += 2 * s.weight
			} else if earlier != "" && s.match(earlierT) {
				n += s.weight
			}
		}
		if n > 0 {
			f.Signals[fam] = n / 2
		}
	}
	switch {
	case f.Images:
		return Vision, f
	case f.Tools:
		return ToolUse, f
	case f.NonLatin:
		return Multilingual, f
	}
	best, bestN := General, minSignal-1
	for _, fam := range []string{Coding, Math, Multilingual, Writing, Reasoning} { // ties: the first
		if n := f.Signals[fam]; n > bestN {
			best, bestN = fam, n
		}
	}
	return best, f
}
