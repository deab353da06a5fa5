package ticketd.client;

class JsonTest {
    @Test
    void errorField() {
        String[][] cases = {
            {"{\"error\":\"unknown sequence \\\"x\\\"\"}", "unknown sequence \"x\""},
            {" { \"other\" : \"a\" , \"error\" : \"b\\nc\\u0041\" } ", "b\ncA"},
            {"{\"error\":1}", null},
            {"not json", null},
            {"{\"error\":\"unterminated", null},
            {"", null},
        };
        for (String[] c : cases) {
            Check.eq(Json.errorField(c[0]), c[1], "errorField(" + c[0] + ")");
        }
    }
}
