// Prices per GPU-hour that the user supplies (a CSV file), so that the advisor can
// say what a plan costs. gpuvs ships no current quotes: data/prices/example-prices.csv
// is an example, dated and marked as such, loaded with `--prices example`.
//
// Format: '#' comment lines (the first ones are kept as the file's description),
// then a header with the columns gpu, price_per_gpu_hour, currency (required) and
// source, note (optional), in any order; RFC 4180 quoting. One currency per file.
// Every failure is one UsageError line "<file>:<line>: <problem>" (exit 2).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "specs/catalogue.h"

namespace gpuvs::advise {

struct Price {
  std::string gpu_id;       // catalogue id
  double per_gpu_hour = 0;  // in the file's currency
  std::string source;       // as written (URL or description)
  int line = 0;
};

class Prices {
 public:
  static Prices parse(std::string_view text, std::string_view name, const Catalogue& catalogue);
  static Prices load(const std::filesystem::path& path, const Catalogue& catalogue);
  // The embedded example (data/prices/example-prices.csv).
  static Prices example(const Catalogue& catalogue);

  const Price* find(const std::string& gpu_id) const;
  const std::vector<Price>& prices() const { return prices_; }
  const std::string& currency() const { return currency_; }
  const std::string& name() const { return name_; }
  // The leading comment lines, without '#': what the file says about itself.
  const std::vector<std::string>& description() const { return description_; }

 private:
  std::vector<Price> prices_;
  std::string currency_;
  std::string name_;
  std::vector<std::string> description_;
};

}  // namespace gpuvs::advise
