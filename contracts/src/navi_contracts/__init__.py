"""navi-contracts: the wire layer every Navi package speaks."""

from navi_contracts.logging import configure_logging
from navi_contracts.paths import artifacts_root, repo_root
from navi_contracts.settings import ContractLimits, NaviSettings

__all__ = ["ContractLimits", "NaviSettings", "artifacts_root", "configure_logging", "repo_root"]
__version__ = "0.1.0"
