// Exceptions -> HTTP errors: ApiError as it is; serve::EngineBusy -> 503; serve::RequestError (a
// request read or assembled below http/) -> 400 naming its field; std::invalid_argument
// and std::length_error (what the engine and the text layer throw for bad input) -> 400; anything
// else -> 500. Handlers throw; one wrapper answers.
#pragma once

#include <exception>

#include "http/api/api_error.h"

namespace httplib {
struct Response;
}

namespace tandem::http {

ApiError map_exception(std::exception_ptr e);
void send_error(httplib::Response& res, const ApiError& e);

}  // namespace tandem::http
