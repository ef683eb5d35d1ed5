// Fuzzing with a fixed seed: templates built at random from Jinja's
// grammar, and random byte mutations of chat-template-like sources, each
// rendered with a random JSON context under low limits. Every case must
// either render or throw tandem::Error: no crash, no hang, no other
// exception. A failure prints the template that caused it.
#include <random>

#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

class Fuzzer {
 public:
  explicit Fuzzer(uint32_t seed) : rng_(seed) {}

  size_t pick(size_t n) { return n == 0 ? 0 : rng_() % n; }
  template <typename T, size_t N>
  const T& one_of(const T (&items)[N]) { return items[pick(N)]; }

  std::string expression(int depth) {
    static const char* const kAtoms[] = {
        "messages", "messages[0]", "messages[-1]", "message", "message.role", "message['content']", "tools",
        "x", "ns", "ns.a", "loop", "loop.index0", "loop.last", "'user'", "'a\\nb'", "\"q\"", "''", "0", "1", "-1",
        "2.5", "1e-5", "true", "False", "none", "[]", "[1, 'a']", "{}", "{'k': 1}", "(1, 2)", "range(3)",
        "add_generation_prompt", "bos_token", "enable_thinking", "undefined_name", "10 ** 6", "'ab' * 3"};
    if (depth <= 0 || pick(3) == 0) return one_of(kAtoms);
    static const char* const kBinary[] = {" + ", " - ", " * ", " / ", " // ", " % ", " ** ", " ~ ", " == ",
                                          " != ", " < ", " >= ", " in ", " not in ", " and ", " or "};
    static const char* const kFilters[] = {
        "trim", "tojson", "tojson(indent=2)", "length", "items", "join(', ')", "default('d')", "first", "last",
        "map(attribute='role')", "select('string')", "reject('equalto', 'a')", "selectattr('role', 'eq', 'user')",
        "list", "string", "int", "float", "abs", "round(1)", "indent(2)", "upper", "lower", "title",
        "capitalize", "replace('a', 'b')", "e", "unique", "sort", "reverse", "sum", "min", "max", "batch(2)",
        "wordcount", "center(9)", "truncate(5)", "dictsort", "count", "safe", "d(true)"};
    static const char* const kTests[] = {"defined", "undefined", "none", "string", "number", "integer", "float",
                                         "boolean", "true", "false", "mapping", "iterable", "sequence", "callable",
                                         "eq 1", "ne 'a'", "lt 2", "in [1]", "odd", "even", "divisibleby 2",
                                         "lower", "upper"};
    static const char* const kMethods[] = {".startswith('a')", ".endswith('b')", ".strip()", ".rstrip('\\n')",
                                           ".split()", ".split('</think>')[0]", ".replace('a', 'c')", ".upper()",
                                           ".items()", ".keys()", ".get('role')", ".get('x', 2)", ".index(1)",
                                           ".count('a')", ".title()", ".find('x')", "[::-1]", "[1:]", "[0]",
                                           ".role", "['content']", "(1)"};
    switch (pick(8)) {
      case 0: return expression(depth - 1) + one_of(kBinary) + expression(depth - 1);
      case 1: return expression(depth - 1) + " | " + one_of(kFilters);
      case 2: return expression(depth - 1) + " is " + (pick(2) ? "not " : "") + one_of(kTests);
      case 3: return expression(depth - 1) + one_of(kMethods);
      case 4: return "(" + expression(depth - 1) + " if " + expression(depth - 1) + " else " + expression(depth - 1) + ")";
      case 5: return "not " + expression(depth - 1);
      case 6: return "[" + expression(depth - 1) + ", " + expression(depth - 1) + "]";
      default: return "-" + expression(depth - 1);
    }
  }

  std::string statements(int depth) {
    std::string out;
    size_t n = 1 + pick(4);
    for (size_t i = 0; i < n; ++i) {
      std::string dash = pick(4) == 0 ? "-" : "";
      switch (depth <= 0 ? pick(3) : pick(10)) {
        case 0: out += one_of({"text ", "\n", "  ", "<|im_start|>", "é"}); break;
        case 1: out += "{{" + dash + " " + expression(2) + " " + dash + "}}"; break;
        case 2: out += "{% set x = " + expression(2) + " %}"; break;
        case 3: out += "{% if " + expression(2) + " %}" + statements(depth - 1) + "{% elif " + expression(1) +
                       " %}x{% else %}" + statements(depth - 1) + "{% endif %}";
          break;
        case 4: out += "{%" + dash + " for message in " + expression(1) + (pick(2) ? " if message" : "") + " %}" +
                       statements(depth - 1) + (pick(3) == 0 ? "{% break %}" : "") + "{% else %}e{% endfor %}\n";
          break;
        case 5: out += "{% set ns = namespace(a=" + expression(1) + ") %}{% set ns.a = " + expression(2) + " %}"; break;
        case 6: out += "{% macro m(a, b=1) %}" + statements(depth - 1) + "{{ a }}{% endmacro %}{{ m(" +
                       expression(1) + ") }}";
          break;
        case 7: out += "{% filter upper %}" + statements(depth - 1) + "{% endfilter %}"; break;
        case 8: out += "{# c #}{% raw %}{{ r }}{% endraw %}"; break;
        default: out += "  {% for a, b in " + expression(1) + " %}{{ a }}{{ loop.cycle(1, 2) }}{% endfor %}"; break;
      }
    }
    return out;
  }

  std::string mutate(std::string s) {
    static const char kBytes[] = "{}%#-+|.,:()[]'\"\\\n =~*/<>!abz0_";
    size_t edits = 1 + pick(6);
    for (size_t i = 0; i < edits && !s.empty(); ++i) {
      size_t at = pick(s.size());
      switch (pick(5)) {
        case 0: s.erase(at, 1 + pick(8)); break;
        case 1: s.insert(at, 1, kBytes[pick(sizeof kBytes - 1)]); break;
        case 2: s[at] = static_cast<char>(pick(256)); break;
        case 3: s.insert(at, s.substr(pick(s.size()), pick(20))); break;
        default: s.insert(at, one_of({"{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{% endif %}",
                                      "{% endfor %}", "{% else %}", "| tojson", ".split(", "[::-1]"}));
      }
    }
    return s;
  }

  nlohmann::ordered_json context() {
    static const char* const kRoles[] = {"system", "user", "assistant", "tool", "weird"};
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    size_t n = pick(5);
    for (size_t i = 0; i < n; ++i) {
      nlohmann::ordered_json m = {{"role", one_of(kRoles)}};
      switch (pick(4)) {
        case 0: m["content"] = "Hello <think>hm</think>\n\nworld é"; break;
        case 1: m["content"] = nlohmann::ordered_json::array({{{"type", "text"}, {"text", " hi "}}}); break;
        case 2: m["content"] = nullptr; break;
        default: m["content"] = pick(2) ? "a" : "";
      }
      if (pick(3) == 0) m["tool_calls"] = {{{"function", {{"name", "f"}, {"arguments", {{"x", 1.5}}}}}}};
      messages.push_back(m);
    }
    nlohmann::ordered_json c = {{"messages", messages}, {"add_generation_prompt", pick(2) == 0}};
    if (pick(2)) c["tools"] = nlohmann::ordered_json::array({{{"name", "f"}, {"parameters", {{"type", "object"}}}}});
    if (pick(2)) c["enable_thinking"] = pick(2) == 0;
    if (pick(2)) c["bos_token"] = "<s>";
    return c;
  }

 private:
  std::mt19937 rng_;
};

const char* const kSeedTemplates[] = {
    "{%- for message in messages %}\n  {%- if message.role == 'user' %}\n{{ '<|user|>' + message.content | trim }}\n"
    "  {%- elif message.role == 'assistant' %}{{ message.content.split('</think>')[-1] }}{% endif %}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}",
    "{% set ns = namespace(last=-1) %}{% for m in messages[::-1] %}{% set i = messages | length - 1 - loop.index0 %}"
    "{% if ns.last == -1 and m.role == 'user' %}{% set ns.last = i %}{% endif %}{% endfor %}{{ ns.last }}"
    "{% if tools %}{% for t in tools %}\n{{ t | tojson(indent=4) }}{% endfor %}{% endif %}",
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate') }}{% endif %}{{ message['content'] is string }}"
    "{% endfor %}{{ strftime_now('%d %b %Y') }}{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>{% endif %}",
};

TEST(JinjaFuzz, RendersOrThrowsErrorOnly) {
  Fuzzer fuzzer(20250601);
  Limits limits;
  limits.max_steps = 20000;
  limits.max_output_bytes = 1 << 16;
  limits.max_call_depth = 16;
  int rendered = 0, refused = 0;
  constexpr int kCases = 20000;
  for (int i = 0; i < kCases; ++i) {
    std::string source = i % 2 == 0 ? fuzzer.statements(3) : fuzzer.mutate(fuzzer.one_of(kSeedTemplates));
    nlohmann::ordered_json context = fuzzer.context();
    try {
      Template::parse(source).render(context, limits, Environment{kTestNow});
      ++rendered;
    } catch (const Error& e) {
      ++refused;
      ASSERT_EQ(std::string(e.what()).rfind("chat template", 0), 0u) << e.what() << "\n" << source;
    } catch (const std::exception& e) {
      FAIL() << "case " << i << " threw " << e.what() << " on:\n" << source;
    }
  }
  // Both outcomes must occur, or the fuzzer is not exploring.
  EXPECT_GT(rendered, kCases / 10);
  EXPECT_GT(refused, kCases / 10);
}

}  // namespace
}  // namespace tandem::jinja::testing
