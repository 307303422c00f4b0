// SHA-256 through OpenSSL's libcrypto (EVP), the maintained implementation every target has.
#include "base/hash.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace section::detail {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed in libcrypto");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace section::detail
