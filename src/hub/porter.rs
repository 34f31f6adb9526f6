//! The Porter stemming algorithm (M. F. Porter, 1980), as in Porter's own C implementation
//! (`porter.c`, which the `fast-stemmer` gem wraps), including its two departures from the
//! paper: `bli -> ble` (not `abli -> able`) and `logi -> log`, and leaving words of one or two
//! letters alone.
//!
//! Works on ASCII bytes; the word is expected in lower case.

struct Stemmer {
    b: Vec<u8>,
    /// End of the current word (inclusive).
    k: usize,
    /// A general offset into the word, set by `ends`.
    j: usize,
}

/// The Porter stem of a lower-case ASCII word. Other bytes are treated as consonants.
pub(crate) fn stem(word: &str) -> String {
    if word.len() <= 2 || !word.is_ascii() {
        return word.to_owned();
    }
    let mut z = Stemmer {
        b: word.as_bytes().to_vec(),
        k: word.len() - 1,
        j: 0,
    };
    z.step1ab();
    if z.k > 0 {
        z.step1c();
        z.step2();
        z.step3();
        z.step4();
        z.step5();
    }
    z.b.truncate(z.k + 1);
    String::from_utf8(z.b).unwrap_or_default()
}

impl Stemmer {
    /// Whether `b[i]` is a consonant.
    fn cons(&self, i: usize) -> bool {
        match self.b[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The number of consonant sequences between 0 and `j`: `[C](VC){m}[V]` gives m.
    fn m(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        loop {
            if i > self.j {
                return n;
            }
            if !self.cons(i) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i > self.j {
                    return n;
                }
                if self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i > self.j {
                    return n;
                }
                if !self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    /// Whether 0..=j contains a vowel.
    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.cons(i))
    }

    /// Whether `j-1, j` is a double consonant.
    fn double_c(&self, j: usize) -> bool {
        j >= 1 && self.b[j] == self.b[j - 1] && self.cons(j)
    }

    /// Whether `i-2, i-1, i` is consonant-vowel-consonant and the last is not w, x or y.
    fn cvc(&self, i: usize) -> bool {
        if i < 2 || !self.cons(i) || self.cons(i - 1) || !self.cons(i - 2) {
            return false;
        }
        !matches!(self.b[i], b'w' | b'x' | b'y')
    }

    /// Whether 0..=k ends with `s`; sets `j` to just before it when it does.
    fn ends(&mut self, s: &str) -> bool {
        let s = s.as_bytes();
        let len = s.len();
        if len > self.k + 1 {
            return false;
        }
        if &self.b[self.k + 1 - len..=self.k] != s {
            return false;
        }
        // `j` may be "-1" in C when the whole word matched; wrapping keeps `j + 1` right.
        self.j = (self.k + 1 - len).wrapping_sub(1);
        true
    }

    /// Sets `j+1..=k` to `s`, adjusting `k`.
    fn set_to(&mut self, s: &str) {
        let start = self.j.wrapping_add(1);
        self.b.truncate(start);
        self.b.extend_from_slice(s.as_bytes());
        self.k = self.b.len() - 1;
    }

    fn r(&mut self, s: &str) {
        if self.j != usize::MAX && self.m() > 0 {
            self.set_to(s);
        }
    }

    /// Gets rid of plurals and -ed or -ing.
    fn step1ab(&mut self) {
        if self.b[self.k] == b's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.b[self.k - 1] != b's' {
                self.k -= 1;
            }
        }
        self.b.truncate(self.k + 1);
        if self.ends("eed") {
            if self.j != usize::MAX && self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing"))
            && self.j != usize::MAX
            && self.vowel_in_stem()
        {
            self.k = self.j;
            self.b.truncate(self.k + 1);
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_c(self.k) {
                if !matches!(self.b[self.k], b'l' | b's' | b'z') {
                    self.k -= 1;
                }
            } else {
                self.j = self.k;
                if self.m() == 1 && self.cvc(self.k) {
                    self.b.truncate(self.k + 1);
                    self.b.push(b'e');
                    self.k += 1;
                }
            }
        }
        self.b.truncate(self.k + 1);
    }

    /// Turns a terminal y into i when there is another vowel in the stem.
    fn step1c(&mut self) {
        if self.ends("y") && self.j != usize::MAX && self.vowel_in_stem() {
            self.b[self.k] = b'i';
        }
    }

    fn replace_first(&mut self, rules: &[(&str, &str)]) {
        for (from, to) in rules {
            if self.ends(from) {
                self.r(to);
                return;
            }
        }
    }

    /// Maps double suffixes to single ones.
    fn step2(&mut self) {
        let rules: &[(&str, &str)] = match self.b[self.k - 1] {
            b'a' => &[("ational", "ate"), ("tional", "tion")],
            b'c' => &[("enci", "ence"), ("anci", "ance")],
            b'e' => &[("izer", "ize")],
            b'l' => &[
                ("bli", "ble"),
                ("alli", "al"),
                ("entli", "ent"),
                ("eli", "e"),
                ("ousli", "ous"),
            ],
            b'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            b's' => &[
                ("alism", "al"),
                ("iveness", "ive"),
                ("fulness", "ful"),
                ("ousness", "ous"),
            ],
            b't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            b'g' => &[("logi", "log")],
            _ => &[],
        };
        self.replace_first(rules);
    }

    /// Deals with -ic-, -full, -ness etc.
    fn step3(&mut self) {
        let rules: &[(&str, &str)] = match self.b[self.k] {
            b'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            b'i' => &[("iciti", "ic")],
            b'l' => &[("ical", "ic"), ("ful", "")],
            b's' => &[("ness", "")],
            _ => &[],
        };
        self.replace_first(rules);
    }

    /// Takes off -ant, -ence etc. in context <c>vcvc<v>.
    fn step4(&mut self) {
        let suffixes: &[&str] = match self.b[self.k - 1] {
            b'a' => &["al"],
            b'c' => &["ance", "ence"],
            b'e' => &["er"],
            b'i' => &["ic"],
            b'l' => &["able", "ible"],
            b'n' => &["ant", "ement", "ment", "ent"],
            b'o' => {
                let ion = self.ends("ion")
                    && self.j != usize::MAX
                    && matches!(self.b[self.j], b's' | b't');
                if !ion && !self.ends("ou") {
                    return;
                }
                &[]
            }
            b's' => &["ism"],
            b't' => &["ate", "iti"],
            b'u' => &["ous"],
            b'v' => &["ive"],
            b'z' => &["ize"],
            _ => return,
        };
        if !suffixes.is_empty() && !suffixes.iter().any(|s| self.ends(s)) {
            return;
        }
        if self.j != usize::MAX && self.m() > 1 {
            self.k = self.j;
        }
    }

    /// Removes a final -e if m > 1, and changes -ll to -l if m > 1.
    fn step5(&mut self) {
        self.j = self.k;
        if self.b[self.k] == b'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        if self.b[self.k] == b'l' && self.double_c(self.k) && self.m() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn porter_vocabulary() {
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
            ("generalizations", "gener"),
            ("oscillators", "oscil"),
            ("install", "instal"),
            ("files", "file"),
            ("repos", "repo"),
            ("requests", "request"),
            ("packages", "packag"),
            ("directories", "directori"),
            ("searching", "search"),
            ("is", "is"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "{word}");
        }
    }
}
