package ticketd.client;

/** Just enough JSON to read ticketd's error answers: {"error": "…"}. */
final class Json {
    private Json() {}

    /** The string value of the top-level "error" key of text, or null. */
    static String errorField(String text) {
        int i = skip(text, 0);
        if (i >= text.length() || text.charAt(i) != '{') {
            return null;
        }
        i++;
        while (true) {
            i = skip(text, i);
            if (i >= text.length() || text.charAt(i) != '"') {
                return null;
            }
            StringBuilder key = new StringBuilder();
            i = string(text, i, key);
            if (i < 0) {
                return null;
            }
            i = skip(text, i);
            if (i >= text.length() || text.charAt(i) != ':') {
                return null;
            }
            i = skip(text, i + 1);
            if (i >= text.length() || text.charAt(i) != '"') {
                return null; // ticketd's values are strings; anything else: give up
            }
            StringBuilder val = new StringBuilder();
            i = string(text, i, val);
            if (i < 0) {
                return null;
            }
            if (key.toString().equals("error")) {
                return val.toString();
            }
            i = skip(text, i);
            if (i >= text.length() || text.charAt(i) != ',') {
                return null;
            }
            i++;
        }
    }

    private static int skip(String s, int i) {
        while (i < s.length() && (s.charAt(i) == ' ' || s.charAt(i) == '\t' || s.charAt(i) == '\n' || s.charAt(i) == '\r')) {
            i++;
        }
        return i;
    }

    /** Reads the JSON string starting at the quote at i into out; returns the index after it, or -1. */
    private static int string(String s, int i, StringBuilder out) {
        for (i++; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') {
                return i + 1;
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (++i >= s.length()) {
                return -1;
            }
            switch (s.charAt(i)) {
                case '"' -> out.append('"');
                case '\\' -> out.append('\\');
                case '/' -> out.append('/');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> {
                    if (i + 4 >= s.length()) {
                        return -1;
                    }
                    try {
                        out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                    } catch (NumberFormatException e) {
                        return -1;
                    }
                    i += 4;
                }
                default -> {
                    return -1;
                }
            }
        }
        return -1;
    }
}
