// Exceptions thrown by the engine. Lookups that find nothing return false;
// exceptions are for bad input, corrupted storage and I/O failures.
#pragma once

#include <stdexcept>
#include <string>

namespace forein {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller passed something the engine does not accept (oversized key or
// value, unsorted bulk-load input, bad option). Nothing was changed.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Stored data failed verification: bad magic, bad checksum, truncated file,
// broken tree invariant. The message names the page.
class CorruptionError : public Error {
 public:
  using Error::Error;
};

// The operating system refused an I/O request. The message has errno text.
class IoError : public Error {
 public:
  using Error::Error;
};

}  // namespace forein
