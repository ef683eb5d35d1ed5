// Interpreter: statements, scopes and the limits (expressions: eval.cpp).
#include "common/jinja/interpreter.h"

#include <nlohmann/json.hpp>

#include "common/jinja/failure.h"
#include "common/jinja/template.h"

namespace tandem::jinja {

Interpreter::Interpreter(const Limits& limits, const Environment& environment)
    : max_output_bytes_(limits.max_output_bytes),
      max_steps_(limits.max_steps),
      max_call_depth_(limits.max_call_depth),
      now_seconds_(environment.now_seconds) {}

Interpreter::~Interpreter() {
  for (auto& scope : captured_scopes_) scope->vars.clear();
  for (auto& ns : namespaces_) ns.namespace_dict().entries.clear();
}

std::string Interpreter::render(const Body& body, const nlohmann::ordered_json& context) {
  scope_ = std::make_shared<Scope>();
  if (!context.is_null()) {
    if (!context.is_object()) fail("the context must be a JSON object");
    for (auto it = context.begin(); it != context.end(); ++it) scope_->vars.emplace_back(it.key(), from_json(it.value()));
  }
  std::string output;
  out_ = &output;
  exec(body);
  return output;
}

void Interpreter::charge(size_t steps) {
  steps_ += steps;
  if (steps_ > max_steps_) {
    fail("rendering took more than " + std::to_string(max_steps_) + " steps (Limits::max_steps)");
  }
}

void Interpreter::charge_scan(const Value& v) {
  if (v.is_string()) charge(v.as_string().size() / 64);
  else if (v.is_list()) charge(v.as_list().size() / 8);
  else if (v.is_dict()) charge(v.as_dict().entries.size() / 8);
}

void Interpreter::check_size(size_t bytes) const {
  if (bytes > max_output_bytes_) {
    fail("text of " + std::to_string(bytes) + " bytes exceeds the output limit of " +
         std::to_string(max_output_bytes_) + " bytes (Limits::max_output_bytes)");
  }
}

void Interpreter::append(const std::string& text) {
  check_size(out_->size() + text.size());
  charge(text.size() / 64);
  *out_ += text;
}

// Renders `body` to a string, in a scope of its own: Jinja2 keeps what a
// filter block, a set block or a call block sets inside it.
std::string Interpreter::capture(const Body& body) {
  std::string captured;
  std::string* saved = out_;
  std::shared_ptr<Scope> saved_scope = scope_;
  out_ = &captured;
  scope_ = std::make_shared<Scope>(Scope{{}, saved_scope});
  try {
    Flow flow = exec(body);
    (void)flow;
  } catch (...) {
    out_ = saved;
    scope_ = saved_scope;
    throw;
  }
  out_ = saved;
  scope_ = saved_scope;
  return captured;
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Scope* s = scope_.get(); s; s = s->parent.get()) {
    for (auto it = s->vars.rbegin(); it != s->vars.rend(); ++it) {
      if (it->first == name) return it->second;
    }
  }
  Value g = global(name);
  if (!g.is_undefined()) return g;
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value value) {
  for (auto& [k, v] : scope_->vars) {
    if (k == name) { v = std::move(value); return; }
  }
  scope_->vars.emplace_back(name, std::move(value));
}

void Interpreter::assign_targets(const std::vector<std::string>& targets, const Value& value) {
  if (targets.size() == 1) {
    assign(targets[0], value);
    return;
  }
  if (!value.is_list() && !value.is_string() && !value.is_dict()) {
    fail("cannot unpack non-iterable " + type_name(value) + " object");
  }
  List items = iterate(value);
  if (items.size() != targets.size()) {
    fail(std::string(items.size() > targets.size() ? "too many" : "not enough") + " values to unpack (expected " +
         std::to_string(targets.size()) + ", got " + std::to_string(items.size()) + ")");
  }
  for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
}

Interpreter::Flow Interpreter::exec(const Body& body) {
  for (auto& s : body) {
    Flow flow = exec(*s);
    if (flow != Flow::normal) return flow;
  }
  return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s) {
  charge(1);
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::text: append(s.text); break;
    case StmtKind::output: {
      Value v = eval(*s.expr);
      append(to_str(v));
      break;
    }
    case StmtKind::if_: {
      for (auto& branch : s.branches) {
        if (truthy(eval(*branch.condition))) return exec(branch.body);
      }
      return exec(s.else_body);
    }
    case StmtKind::for_: exec_for(s); break;
    case StmtKind::set: exec_set(s); break;
    case StmtKind::set_block: {
      Value body = Value::string(capture(s.body));
      if (s.expr) {
        const Value* saved = block_body_;
        block_body_ = &body;
        body = eval(*s.expr);
        block_body_ = saved;
      }
      assign(s.targets[0], body);
      break;
    }
    case StmtKind::macro: define_macro(s); break;
    case StmtKind::call_block: {
      const Expr& call_expr = *s.expr;
      Value callee = eval(*call_expr.operands[0]);
      CallArgs args = eval_args(call_expr.args, call_expr.line);
      std::shared_ptr<Scope> closure = scope_;
      captured_scopes_.push_back(closure);
      const Stmt* block = &s;
      Value caller = Value::callable("caller", [block, closure](Interpreter& in, CallArgs& a) {
        return in.call_macro(*block, closure, a, nullptr);
      });
      args.keyword.emplace_back("caller", caller);
      append(to_str(call(callee, args)));
      break;
    }
    case StmtKind::filter_block: {
      Value body = Value::string(capture(s.body));
      const Value* saved = block_body_;
      block_body_ = &body;
      Value filtered = eval(*s.expr);
      block_body_ = saved;
      line_ = s.line;
      append(to_str(filtered));
      break;
    }
    case StmtKind::break_: return Flow::break_loop;
    case StmtKind::continue_: return Flow::continue_loop;
  }
  return Flow::normal;
}

void Interpreter::exec_set(const Stmt& s) {
  Value value = eval(*s.expr);
  if (s.attribute.empty()) {
    assign_targets(s.targets, value);
    return;
  }
  Value target = lookup(s.targets[0]);
  if (!target.is_namespace()) fail("cannot assign attribute on non-namespace object");
  target.namespace_dict().set(s.attribute, std::move(value));
}

namespace {

Value make_loop(const List& items, size_t i) {
  size_t n = items.size();
  Dict d;
  d.entries.reserve(12);
  d.entries.emplace_back("index", Value::integer(static_cast<int64_t>(i + 1)));
  d.entries.emplace_back("index0", Value::integer(static_cast<int64_t>(i)));
  d.entries.emplace_back("revindex", Value::integer(static_cast<int64_t>(n - i)));
  d.entries.emplace_back("revindex0", Value::integer(static_cast<int64_t>(n - i - 1)));
  d.entries.emplace_back("first", Value::boolean(i == 0));
  d.entries.emplace_back("last", Value::boolean(i + 1 == n));
  d.entries.emplace_back("length", Value::integer(static_cast<int64_t>(n)));
  d.entries.emplace_back("depth", Value::integer(1));
  d.entries.emplace_back("depth0", Value::integer(0));
  d.entries.emplace_back("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  d.entries.emplace_back("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  d.entries.emplace_back("cycle", Value::callable("loop.cycle", [i](Interpreter&, CallArgs& args) {
    if (args.positional.empty()) fail("no items for cycling given");
    return args.positional[i % args.positional.size()];
  }));
  return Value::dict(std::move(d));
}

}  // namespace

void Interpreter::exec_for(const Stmt& s) {
  Value iterable = eval(*s.expr);
  if (!iterable.is_list() && !iterable.is_dict() && !iterable.is_string() && !iterable.is_undefined()) {
    fail("'" + type_name(iterable) + "' object is not iterable");
  }
  if (iterable.is_namespace()) fail("'Namespace' object is not iterable");
  List items = iterate(iterable);
  charge(items.size() / 8);
  std::shared_ptr<Scope> outer = scope_;
  if (s.condition) {
    List kept;
    for (auto& item : items) {
      charge(1);
      scope_ = std::make_shared<Scope>(Scope{{}, outer});
      assign_targets(s.targets, item);
      bool keep = truthy(eval(*s.condition));
      scope_ = outer;
      if (keep) kept.push_back(item);
    }
    items = std::move(kept);
  }
  // Jinja2 runs the else block unless one iteration ran its body to the
  // end: a loop whose every iteration ends in break or continue runs it too.
  bool body_completed = false;
  try {
    for (size_t i = 0; i < items.size(); ++i) {
      charge(1);
      scope_ = std::make_shared<Scope>(Scope{{}, outer});
      assign_targets(s.targets, items[i]);
      assign("loop", make_loop(items, i));
      Flow flow = exec(s.body);
      if (flow == Flow::break_loop) break;
      if (flow == Flow::normal) body_completed = true;
    }
  } catch (...) {
    scope_ = outer;
    throw;
  }
  scope_ = outer;
  if (!body_completed) exec(s.else_body);
}

void Interpreter::define_macro(const Stmt& s) {
  std::shared_ptr<Scope> closure = scope_;
  captured_scopes_.push_back(closure);
  const Stmt* macro = &s;
  assign(s.name, Value::callable(s.name, [macro, closure](Interpreter& in, CallArgs& args) {
    const Value* caller = nullptr;
    Value caller_value;
    for (size_t i = 0; i < args.keyword.size(); ++i) {
      if (args.keyword[i].first == "caller") {
        caller_value = args.keyword[i].second;
        caller = &caller_value;
        args.keyword.erase(args.keyword.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
    return in.call_macro(*macro, closure, args, caller);
  }));
}

Value Interpreter::call_macro(const Stmt& macro, const std::shared_ptr<Scope>& closure, CallArgs& args,
                              const Value* caller) {
  const std::string name = macro.kind == StmtKind::macro ? macro.name : "caller";
  if (call_depth_ >= max_call_depth_) {
    fail("macro calls nested more than " + std::to_string(max_call_depth_) + " deep (Limits::max_call_depth)");
  }
  if (args.positional.size() > macro.params.size()) {
    fail("macro '" + name + "' takes not more than " + std::to_string(macro.params.size()) + " argument(s)");
  }
  std::shared_ptr<Scope> saved = scope_;
  int saved_line = line_;
  scope_ = std::make_shared<Scope>(Scope{{}, closure});
  ++call_depth_;
  std::string result;
  try {
    std::vector<bool> bound(macro.params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      assign(macro.params[i].name, args.positional[i]);
      bound[i] = true;
    }
    for (auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < macro.params.size() && macro.params[i].name != key) ++i;
      if (i == macro.params.size()) fail("macro '" + name + "' takes no keyword argument '" + key + "'");
      if (bound[i]) fail("macro '" + name + "' got multiple values for argument '" + key + "'");
      assign(key, value);
      bound[i] = true;
    }
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (bound[i]) continue;
      const Parameter& p = macro.params[i];
      assign(p.name, p.default_value ? eval(*p.default_value)
                                     : Value::undefined("parameter '" + p.name + "' was not provided"));
    }
    if (caller) assign("caller", *caller);
    result = capture(macro.body);
  } catch (...) {
    scope_ = saved;
    --call_depth_;
    throw;
  }
  scope_ = saved;
  --call_depth_;
  line_ = saved_line;
  return Value::string(std::move(result));
}

}  // namespace tandem::jinja
