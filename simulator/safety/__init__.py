"""The clinical safety case, a feature slice: the hazard log (DCB0129), its controls judged on runs, residual
risk on the declared matrix, harm-weighted error, the trend across runs, the printable document and its
sign-offs. It reads run folders through the analysis layer and never writes into them."""
