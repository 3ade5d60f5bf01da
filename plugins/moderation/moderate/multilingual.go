package moderate

import (
	"strings"
	"unicode/utf8"
)

// Prompt injection in German, Spanish, Italian, Portuguese, Russian,
// Chinese and Japanese. Inflection and scripts without spaces make word
// patterns brittle, so each language has stems of a few concepts, and an
// attack is two of them in one sentence: a verb that sets instructions
// aside with an object that names them ("vergiss … Anweisungen",
// "忽略 … 指令"), a verb that reveals with something secret ("muéstrame …
// instrucciones originales"), or an AI persona with "without
// restrictions". Negated verbs ("vergiss nicht", "不要忘记") are removed
// first: "don't forget the manual's instructions" is advice.
type concept struct{ name, a, b string }

var multiConcepts = []concept{
	{"ignore-instructions", "ignore", "instructions"},
	{"reveal-prompt", "reveal", "secret"},
	{"no-restrictions", "persona", "unrestricted"},
}

var multiStems = map[string][]string{
	"ignore": {
		"ignorier", "vergiss", "vergessen sie", "missacht", "übergeh", "beachte nicht", "nicht beachten", "hör auf, ", "setze außer kraft",
		"ignora", "olvida", "olvide", "haz caso omiso", "no hagas caso", "descarta", "desestima", "omite",
		"dimentica", "non seguire", "trascura", "non considerare", "non tenere conto",
		"ignore", "esqueça", "esqueca", "desconsider", "não siga", "nao siga", "descarte",
		"игнорир", "забудь", "забудьте", "не обращай внимания", "не обращайте внимания", "не следуй", "не слушай", "отбрось",
		"忽略", "无视", "忘记", "忘掉", "不要再遵守", "不要遵守", "别管", "不要理会", "不再遵守", "忽視", "忘記",
		"無視", "忘れ", "従うのをやめ", "従わな",
	},
	"instructions": {
		"anweisung", "instruktion", "regeln", "vorgaben", "richtlinien", "systemprompt", "system-prompt", "befehle", "was dir vorher gesagt", "was man dir gesagt",
		"instrucciones", "indicaciones", "reglas", "directrices", "prompt", "todo lo que te dijeron", "órdenes previas",
		"istruzioni", "regole", "direttive", "tutto quello che ti è stato detto",
		"instruções", "instrucoes", "regras", "orientações", "orientacoes", "diretrizes", "tudo o que foi dito", "tudo que te disseram",
		"инструкци", "правила", "указани", "промпт", "всё, что тебе говорили", "все, что тебе говорили", "всё, что тебе сказали",
		"指令", "指示", "规则", "设定", "提示词", "系统提示", "規則", "設定",
		"ルール", "プロンプト", "命令",
	},
	"reveal": {
		"zeig", "gib", "verrate", "nenne", "wiederhole", "ausgeben", "offenbare",
		"muestra", "muéstrame", "dime", "revela", "revélame", "repite", "imprime", "enséñame",
		"mostra", "mostrami", "rivela", "rivelami", "dimmi", "ripeti", "stampa",
		"mostre", "revele", "diga", "repita", "repete", "imprima",
		"покажи", "раскрой", "скажи", "повтори", "выведи", "напиши",
		"显示", "告诉我", "重复", "输出", "打印", "透露", "泄露", "告訴我",
		"表示", "教えて", "繰り返", "出力", "見せて",
	},
	"secret": {
		"systemprompt", "system-prompt", "ursprünglichen anweisungen", "ursprüngliche anweisungen", "anfänglichen anweisungen", "passwort",
		"prompt del sistema", "mensaje del sistema", "instrucciones originales", "instrucciones iniciales", "contraseña",
		"prompt di sistema", "messaggio di sistema", "istruzioni originali", "istruzioni iniziali", "password",
		"prompt do sistema", "mensagem do sistema", "instruções originais", "instruções iniciais", "senha",
		"системный промпт", "системное сообщение", "системные инструкции", "исходные инструкции", "пароль", "промпт",
		"系统提示", "原始指令", "初始指令", "密码", "系统指令", "系統提示",
		"システムプロンプト", "元の指示", "最初の指示", "パスワード", "システムメッセージ",
	},
	"persona": {
		"ki ", "ki-", "bist du", "du bist", "ia ", "eres", "intelligenza artificiale", "sei un", "você é", "voce e", "é uma ia",
		"ии ", "ты ", "ai", "人工智能", "你是", "あなたは",
	},
	"unrestricted": {
		"ohne jegliche einschränkungen", "ohne einschränkungen", "ohne regeln", "ohne filter", "keine einschränkungen", "ohne zensur",
		"sin restricciones", "sin reglas", "sin filtros", "sin censura", "sin límites",
		"senza restrizioni", "senza regole", "senza filtri", "senza limiti", "senza censura",
		"sem restrições", "sem restricoes", "sem regras", "sem filtros", "sem limites", "sem censura",
		"без ограничений", "без правил", "без фильтров", "без цензуры",
		"没有任何限制", "没有限制", "不受限制", "无限制", "没有规则", "不受任何限制",
		"制限のない", "制限なし", "制限がない", "ルールのない", "検閲なし",
	},
}

// multiNegations are verbs in the negative: "don't forget".
var multiNegations = []string{"vergiss nicht", "nicht vergessen", "no olvides", "no te olvides", "non dimenticare", "não esqueça", "nao esqueca", "не забудь", "不要忘记", "别忘", "忘れないで", "忘れずに"}

// multiGate are words of the Latin-script languages that may start an
// attack; a sentence in those languages is examined only when it holds
// one (a sentence with Cyrillic or CJK characters always is).
var multiGate = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"ignore", "reveal", "unrestricted"} {
		for _, s := range multiStems[k] {
			if f := strings.Fields(s); len(f) > 0 {
				m[strings.TrimRight(f[0], ",")] = true
			}
		}
	}
	for _, w := range []string{"ignoriere", "ignorieren", "ignoriert", "missachte", "sin", "senza", "sem", "ohne", "keine", "desconsidere", "desconsidera", "ignoren", "olvidad", "dimenticate", "haz", "hagas", "seguire", "siga", "beachte", "beachten"} {
		m[w] = true
	}
	return m
}()

// multilingual finds the concept pairs in the sentences of text that may
// hold one. It works on the text lower-cased but not folded: folding maps
// Cyrillic letters to their Latin look-alikes.
func multilingual(text string) []Finding {
	var fs []Finding
	start := 0
	gated := false
	flush := func(end int) {
		if gated && end > start {
			if f, ok := multiSentence(strings.ToLower(text[start:end])); ok {
				fs = append(fs, f)
			}
		}
		gated = false
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '.' || c == '!' || c == '?' || c == '\n' || c == ';':
			flush(i)
			i++
			start = i
		case c >= 0xD0 && c <= 0xD3: // Cyrillic
			gated = true
			i++
		case c >= 0xE3 && c <= 0xE9: // CJK, kana and CJK punctuation
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == '。' || r == '！' || r == '？' {
				flush(i)
				start = i + n
			} else {
				gated = true
			}
			i += n
		case isLetterByte(c):
			j := i
			for j < len(text) && isLetterByte(text[j]) {
				j++
			}
			var buf [24]byte
			if !gated && j-i <= len(buf) && multiGate[string(lowerASCII(buf[:0], text[i:j]))] {
				gated = true
			}
			i = j
		default:
			i++
		}
	}
	flush(len(text))
	return fs
}

func multiSentence(s string) (Finding, bool) {
	for _, n := range multiNegations {
		if strings.Contains(s, n) {
			s = strings.ReplaceAll(s, n, " ")
		}
	}
	has := func(k string) bool {
		for _, stem := range multiStems[k] {
			if strings.Contains(s, stem) {
				return true
			}
		}
		return false
	}
	for _, c := range multiConcepts {
		if has(c.a) && has(c.b) {
			return Finding{Category: CatInjection, Pattern: "multilingual:" + c.name}, true
		}
	}
	return Finding{}, false
}
