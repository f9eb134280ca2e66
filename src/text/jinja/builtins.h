// The filters, tests, global functions and methods the interpreter implements (builtins.cpp), as
// python jinja2 and HF transformers' chat-template environment define them.
#pragma once

#include <string>
#include <vector>

#include "text/jinja/value.h"

namespace tandem::text::jinja {

bool is_builtin_filter(const std::string& name);
bool is_builtin_test(const std::string& name);
bool is_builtin_global(const std::string& name);  // range, namespace, dict, raise_exception, strftime_now
bool is_builtin_method(const std::string& name);  // str / dict / loop methods

class Interpreter;

// Each throws RenderError for a type it does not apply to (and its own errors).
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& v, CallArgs& args);
// obj.name(args); `found` false when obj's type has no such method.
Value call_method(Interpreter& in, const Value& obj, const std::string& name, CallArgs& args, bool* found);
// The globals a render starts with.
void add_globals(ValueDict& globals);

}  // namespace tandem::text::jinja
