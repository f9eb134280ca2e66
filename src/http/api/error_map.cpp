#include "http/api/error_map.h"

#include <httplib.h>

#include <stdexcept>

#include "serve/engine/engine.h"
#include "serve/request/request_error.h"

namespace tandem::http {

ApiError map_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const ApiError& x) {
    return x;
  } catch (const serve::EngineBusy& x) {
    return unavailable(x.what());
  } catch (const serve::RequestError& x) {  // reading or assembling a request: the field it names
    return bad_request(x.what(), x.field());
  } catch (const std::invalid_argument& x) {
    return bad_request(x.what());
  } catch (const std::length_error& x) {
    return bad_request(x.what());
  } catch (const std::out_of_range& x) {
    return bad_request(x.what());
  } catch (const std::exception& x) {
    return server_error(x.what());
  } catch (...) {
    return server_error("unknown error");
  }
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status();
  res.set_content(to_text(error_body(e)), "application/json; charset=utf-8");
}

}  // namespace tandem::http
