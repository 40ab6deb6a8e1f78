"""Inventory task: restock exactly the low SKUs to target, within a per-order size limit."""

from __future__ import annotations

from typing import Any

from spade.envs import ToolEnv, tool

PRODUCTS = ["hex bolts", "wood screws", "cable ties", "hinges", "drawer slides",
            "wall plugs", "wing nuts", "washers", "brackets", "door handles",
            "castor wheels", "pipe clamps"]  # fmt: skip
MAX_ORDER = 25


class WarehouseRestockEnv(ToolEnv):
    """Rewarded on the final purchase orders, so every low SKU must be found and split."""

    max_turns = 20

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        codes = self.rng.sample(range(100, 1000), 7)
        low = self.rng.sample(range(7), self.rng.randint(3, 4))
        self.items: dict[str, dict[str, Any]] = {}
        for i, (code, name) in enumerate(zip(codes, self.rng.sample(PRODUCTS, 7), strict=True)):
            reorder = self.rng.randint(5, 10) * 5
            target = reorder + self.rng.randint(2, 6) * 5
            low_stock = self.rng.randint(reorder - 20, reorder - 1)
            stock = low_stock if i in low else self.rng.randint(reorder, target + 20)
            self.items[f"SKU-{code}"] = {
                "name": name,
                "on_hand": stock,
                "reorder_point": reorder,
                "target_level": target,
            }
        self.orders: dict[str, tuple[str, int]] = {}
        self.orders_created = 0
        return (
            "Restock the warehouse. For every SKU whose on-hand stock is below its reorder "
            "point, order exactly enough units to bring it up to its target level; order "
            f"nothing for the others. One purchase order holds at most {MAX_ORDER} units. "
            "When done, answer with the total number of units ordered.",
            {},
        )

    def _needed(self) -> dict[str, int]:
        return {
            sku: item["target_level"] - item["on_hand"]
            for sku, item in self.items.items()
            if item["on_hand"] < item["reorder_point"]
        }

    @tool
    def list_skus(self) -> list[str]:
        """List every SKU code in the warehouse."""
        return list(self.items)

    @tool
    def get_stock(self, sku: str) -> dict[str, Any]:
        """Show a SKU's name, on-hand stock, reorder point and target level."""
        if sku not in self.items:
            raise LookupError(f"unknown SKU {sku!r}")
        return {"sku": sku, **self.items[sku]}

    @tool
    def create_purchase_order(self, sku: str, quantity: int) -> str:
        """Order units of one SKU from the supplier.

        Args:
            sku: SKU code, e.g. "SKU-123".
            quantity: Units to order (1 to 25 per purchase order).
        """
        self.get_stock(sku)
        if not 1 <= quantity <= MAX_ORDER:
            raise ValueError(f"quantity must be between 1 and {MAX_ORDER} per purchase order")
        self.orders_created += 1
        po_id = f"PO-{self.orders_created:03d}"
        self.orders[po_id] = (sku, quantity)
        return f"{po_id} created: {quantity} x {sku}."

    @tool
    def cancel_purchase_order(self, po_id: str) -> str:
        """Cancel a purchase order created earlier."""
        if self.orders.pop(po_id, None) is None:
            raise LookupError(f"no open purchase order {po_id!r}")
        return f"{po_id} cancelled."

    def check(self) -> float:
        ordered: dict[str, int] = {}
        for sku, quantity in self.orders.values():
            ordered[sku] = ordered.get(sku, 0) + quantity
        total = str(sum(ordered.values()))
        return float(ordered == self._needed() and (self.submitted_answer or "").strip() == total)

    def solution(self) -> list[Any]:
        calls: list[Any] = [{"name": "list_skus", "arguments": {}}]
        calls += [{"name": "get_stock", "arguments": {"sku": sku}} for sku in self.items]
        for sku, need in self._needed().items():
            while need > 0:
                quantity = min(need, MAX_ORDER)
                calls.append(
                    {
                        "name": "create_purchase_order",
                        "arguments": {"sku": sku, "quantity": quantity},
                    }
                )
                need -= quantity
        return [*calls, str(sum(self._needed().values()))]
