// The syntax tree the parser builds and the interpreter walks. One node
// type for expressions and one for statements, each with a kind and the
// fields that kind uses, which keeps the tree small and the code short.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/jinja/value.h"

namespace tandem::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// A call argument; `name` is empty for a positional one.
struct Argument {
  std::string name;
  ExprPtr value;
};

enum class ExprKind {
  literal,      // value
  name,         // name
  list,         // operands
  tuple,        // operands
  dict,         // operands: key, value, key, value...
  negate,       // -operands[0]
  plus,         // +operands[0]
  logical_not,  // operands[0]
  logical_and,  // operands[0], operands[1]
  logical_or,
  binary,       // name: + - * / // % ** ~
  compare,      // operands[0] ops[0] operands[1] ops[1] operands[2]...
  conditional,  // operands: value, condition, else value (may be null)
  attribute,    // operands[0].name
  subscript,    // operands[0][operands[1]]
  slice,        // operands[0][operands[1]:operands[2]:operands[3]], each may be null
  call,         // operands[0](args)
  filter,       // operands[0] | name(args)
  test,         // operands[0] is [not] name(args)
  block_body,   // the rendered body of {% filter %} / {% set x | f %}
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> operands;
  std::vector<std::string> ops;
  std::vector<Argument> args;
  bool negated = false;
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Parameter {
  std::string name;
  ExprPtr default_value;  // null when the parameter has none
};

enum class StmtKind {
  text,          // text
  output,        // {{ expr }}
  if_,           // branches, else_body
  for_,          // targets in expr [if condition]: body [else else_body]
  set,           // targets = expr, or targets[0].attribute = expr
  set_block,     // {% set targets[0] [| filter] %}body{% endset %}: expr is the filter or null
  macro,         // name(params): body
  call_block,    // {% call(params) expr %}body{% endcall %}
  filter_block,  // {% filter expr %}body{% endfilter %}
  break_,
  continue_,
};

struct Branch {
  ExprPtr condition;
  Body body;
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<Branch> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attribute;  // set ns.attribute = ...
  std::string name;
  std::vector<Parameter> params;
};

}  // namespace tandem::jinja
