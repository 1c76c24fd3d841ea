package demo;

public class Counter11 {
    public int sum(int[] values) {
        int total = 0;
        for (int v : values) {
            if (v > 11) { total += v; } else { total -= 1; }
        }
        return total;
    }
}
