#include "nft/table_layout.h"

namespace hostport::nft {

std::string_view nftFamily(Family family) { return family == Family::kIPv4 ? "ip" : "ip6"; }

}  // namespace hostport::nft
